"""Sends events and a session with Sentry's Python SDK, then checks the collector stored them.

usage: sentry_sdk_client.py DSN COLLECTOR_URL API_TOKEN
Exits 1 with a message for every check that fails.
"""
import json
import sys
import time
import urllib.request

import sentry_sdk

dsn, base, token = sys.argv[1:4]
RELEASE = "pyclient@1.2.3"


def api(path):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def fail_on_division():
    return 1 / 0


sentry_sdk.init(dsn=dsn, release=RELEASE, environment="test", default_integrations=False)

event_ids = []
for attempt in range(2):  # the same exception from the same place twice: one issue, two events
    try:
        fail_on_division()
    except ZeroDivisionError:
        event_ids.append(sentry_sdk.capture_exception())
event_ids.append(sentry_sdk.capture_message("payment service answered 503"))

scope = sentry_sdk.get_isolation_scope()
scope.start_session(session_mode="application")
scope.end_session()
sentry_sdk.flush(timeout=10)

problems = []
projects = api("/api/0/projects")
project = projects[0]["id"]
issues = []
for _ in range(50):
    issues = api(f"/api/0/projects/{project}/issues")
    if sum(issue["event_count"] for issue in issues) >= 3:
        break
    time.sleep(0.1)

division = [issue for issue in issues if issue["title"].startswith("ZeroDivisionError")]
message = [issue for issue in issues if issue["title"] == "payment service answered 503"]
if len(division) != 1 or division[0]["event_count"] != 2:
    problems.append(f"expected one ZeroDivisionError issue with 2 events, got {issues}")
if len(message) != 1 or message[0]["event_count"] != 1:
    problems.append(f"expected one message issue with 1 event, got {issues}")
if division and "fail_on_division" not in division[0]["culprit"]:
    problems.append(f"the culprit should name the raising function: {division[0]['culprit']!r}")
for event_id in event_ids:
    stored = api(f"/api/0/projects/{project}/events/{event_id}")
    if stored.get("release") != RELEASE:
        problems.append(f"event {event_id} stored without its release: {stored.get('release')!r}")

health = []
for _ in range(50):
    health = api(f"/api/0/projects/{project}/release-health")
    if health:
        break
    time.sleep(0.1)
if not health or health[0]["release"] != RELEASE or health[0]["sessions"] < 1:
    problems.append(f"expected a session for {RELEASE}, got {health}")

for problem in problems:
    print("sentry-sdk check:", problem)
print(f"sentry-sdk: {len(event_ids)} events sent, {len(issues)} issues, release health {health}")
sys.exit(1 if problems else 0)
