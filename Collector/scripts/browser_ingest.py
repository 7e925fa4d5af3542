"""Sends sample data for the browser test with Sentry's Python SDK: exceptions in two releases
(with tags, OS and device contexts, breadcrumbs with data, a user, a request, extras and two
attachments, one of them HTML with markup in its name; raised through json's own frames, which are
not in app), a prevented crash shaped like a CrashShield incident, an event whose text is full of
markup, sessions, and a batch of 60 issues whose events were captured over the 14 days before it
was sent; then CrashShield's own SIGSEGV crash as its SDK sent it (the golden envelope
Tests/Golden/Reporting/envelopes/crash-segv.envelope, whose crashed thread has no stack of its own).

usage: browser_ingest.py DSN
"""
import json
import os
import sys
from datetime import datetime, timedelta, timezone
import urllib.parse
import urllib.request

import sentry_sdk

dsn = sys.argv[1]


def parse_header(text):
    return int(text)


def raise_through_stdlib():
    # json's pure-Python frames sit between this frame and parse_header: the issue page shows
    # them only in the full stack.
    json.loads('{"a": 1}', object_hook=lambda _: parse_header("not a number"))


def add_request(event, hint):
    event["request"] = {"url": "https://shop.example/checkout?step=2", "method": "POST", "query_string": "step=2&coupon=SPRING",
                        "headers": {"User-Agent": "Mozilla/5.0 (browser test)", "Content-Type": "application/json"}}
    return event


def send(release, crash_sessions):
    sentry_sdk.init(dsn=dsn, release=release, environment="test", default_integrations=False)
    sentry_sdk.set_tag("device.class", "phone")
    sentry_sdk.set_context("os", {"name": "iOS", "version": "17.4"})
    sentry_sdk.set_context("device", {"model": "iPhone15,2"})
    sentry_sdk.add_breadcrumb(category="ui.tap", message="tapped <Settings>", level="info", data={"view": "SettingsViewController", "x": 120})
    with sentry_sdk.new_scope() as scope:
        scope.set_user({"id": "user-42", "email": "ada@example.com", "username": "ada", "ip_address": "203.0.113.9",
                        "geo": {"city": "Vienna", "country_code": "AT"}})
        scope.set_extra("cart_items", 3)
        scope.add_event_processor(add_request)
        scope.add_attachment(bytes=f"log of {release}\n".encode(), filename="app.log", content_type="text/plain")
        scope.add_attachment(bytes=b"<script>alert('attachment')</script>", filename="<b>report</b>.html", content_type="text/html")
        try:
            raise_through_stdlib()
        except ValueError:
            sentry_sdk.capture_exception()
    # A prevented crash: level warning, handled mechanism, guard tag (what CrashShield sends).
    sentry_sdk.capture_event({
        "level": "warning",
        "tags": {"guard": "container", "launch.phase": "launch", "launch.repair_step": "reset-caches"},
        "exception": {"values": [{
            "type": "NSRangeException", "value": "index 3 beyond bounds [0 .. 2]",
            "mechanism": {"type": "crashshield", "handled": True},
            "stacktrace": {"frames": [{"function": "main", "in_app": True}, {"function": "-[FeedController item:]", "in_app": True}]},
        }]},
    })
    # Four sessions of four users; the first `crash_sessions` of them crash (an unhandled
    # exception captured during a session marks it crashed).
    for index in range(4):
        sentry_sdk.set_user({"id": f"user-{index}"})
        scope = sentry_sdk.get_isolation_scope()
        scope.start_session(session_mode="application")
        if index < crash_sessions:
            sentry_sdk.capture_event({"level": "fatal", "exception": {"values": [{
                "type": "SIGSEGV", "value": "Segmentation fault",
                "mechanism": {"type": "signalhandler", "handled": False},
                "stacktrace": {"frames": [{"function": "main", "in_app": True}, {"function": "render_frame", "in_app": True}]},
            }]}})
        scope.end_session()
    sentry_sdk.flush(timeout=10)


send("browser-app@1.0.0", 2)
send("browser-app@1.1.0", 1)
sentry_sdk.init(dsn=dsn, release="browser-app@1.1.0", default_integrations=False)
sentry_sdk.capture_event({
    "level": "error",
    "message": "<script>alert('x')</script> \u202eevil \U0001F469\u200d\U0001F469\u200d\U0001F467",
    "tags": {"payload": "<img src=x onerror=alert(1)>"},
})
sentry_sdk.flush(timeout=10)

# An outbox's batch, sent now but captured over the 14 days before today: 60 issues (more than a
# page of the issue list), two events each on two different days, in two environments. Each
# event's time is its own timestamp, so each issue's sparkline has two bars on those days.
sentry_sdk.init(dsn=dsn, release="browser-app@1.1.0", default_integrations=False)
now = datetime.now(timezone.utc)
for index in range(60):
    for day in (1 + index % 14, 1 + (index + 5) % 14):
        sentry_sdk.capture_event({
            "level": "error", "timestamp": now - timedelta(days=day), "fingerprint": [f"batch-{index}"],
            "environment": "production" if index % 2 == 0 else "staging",
            "exception": {"values": [{
                "type": f"BatchError{index:02d}", "value": "sent from the outbox",
                "mechanism": {"type": "generic", "handled": False},
                "stacktrace": {"frames": [{"function": "main", "in_app": True}, {"function": f"sync_step_{index % 5}", "in_app": True}]},
            }]},
        })
    if index % 20 == 19:
        sentry_sdk.flush(timeout=10)
sentry_sdk.flush(timeout=10)
# CrashShield's SDK's own crash report as its SDK wrote it, with the envelope header's example
# DSN replaced by this collector's (the collector refuses an envelope naming another project).
url = urllib.parse.urlsplit(dsn)
golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Golden", "Reporting", "envelopes", "crash-segv.envelope")
with open(golden, "rb") as envelope:
    header, item_header, event, rest = envelope.read().split(b"\n", 3)
header = json.loads(header)
header["dsn"] = dsn
# Dated now, as every other event here: the issue list sorts by last seen, 50 to a page, and an
# event with the recording's date would fall off the first page as the days pass.
event = json.loads(event)
event["timestamp"] = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
event = json.dumps(event, separators=(",", ":")).encode()
item_header = json.loads(item_header)
item_header["length"] = len(event)
body = b"\n".join([json.dumps(header).encode(), json.dumps(item_header).encode(), event, rest])
request = urllib.request.Request(f"{url.scheme}://{url.hostname}:{url.port}/api{url.path}/envelope/", data=body, headers={
    "X-Sentry-Auth": f"Sentry sentry_version=7, sentry_client=browser-test/1.0, sentry_key={url.username}",
    "Content-Type": "application/x-sentry-envelope"})
with urllib.request.urlopen(request, timeout=30) as response:
    response.read()
print("browser test data sent")
