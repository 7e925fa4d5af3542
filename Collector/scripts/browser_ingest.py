"""Sends sample data for the browser test with Sentry's Python SDK: exceptions in two releases
(with tags, OS and device contexts, breadcrumbs), a prevented crash shaped like a CrashShield
incident, an event whose text is full of markup, sessions, and a batch of 60 issues whose events
were captured over the 14 days before it was sent.

usage: browser_ingest.py DSN
"""
import sys
from datetime import datetime, timedelta, timezone

import sentry_sdk

dsn = sys.argv[1]


def parse_header(text):
    return int(text)


def send(release, crash_sessions):
    sentry_sdk.init(dsn=dsn, release=release, environment="test", default_integrations=False)
    sentry_sdk.set_tag("device.class", "phone")
    sentry_sdk.set_context("os", {"name": "iOS", "version": "17.4"})
    sentry_sdk.set_context("device", {"model": "iPhone15,2"})
    sentry_sdk.add_breadcrumb(category="ui.tap", message="tapped <Settings>", level="info")
    try:
        parse_header("not a number")
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
print("browser test data sent")
