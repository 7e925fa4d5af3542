"""Two collectors sharing one PostgreSQL ingest the same stream at the same time.

usage: two_collectors.py DSN URL_A URL_B API_TOKEN
Every envelope goes to both collectors concurrently (as when a client retries against another
replica). Afterwards each event must be stored once and every issue's event and user counts must
be exact. Exits 1 naming what is wrong.
"""
import collections
import concurrent.futures
import json
import sys
import urllib.parse
import urllib.request
import uuid

dsn, url_a, url_b, token = sys.argv[1:5]
parsed = urllib.parse.urlparse(dsn)
key, project = parsed.username, parsed.path.strip("/")
EVENTS, ISSUES, USERS = 300, 5, 7


def envelope(index):
    event_id = uuid.uuid4().hex
    event = {
        "event_id": event_id, "level": "error", "platform": "native", "release": f"app@1.{index % 3}.0",
        "user": {"id": f"user-{index % USERS}"},
        "exception": {"values": [{"type": f"Error{index % ISSUES}", "value": f"occurrence {index}",
                                  "stacktrace": {"frames": [{"function": "main", "in_app": True},
                                                            {"function": f"fail{index % ISSUES}", "in_app": True}]}}]},
    }
    payload = json.dumps(event).encode()
    header = json.dumps({"event_id": event_id}).encode()
    item = json.dumps({"type": "event", "length": len(payload)}).encode()
    return index, header + b"\n" + item + b"\n" + payload + b"\n"


def post(base, body):
    request = urllib.request.Request(f"{base}/api/{project}/envelope/", data=body, method="POST", headers={
        "X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={key}", "Content-Type": "application/x-sentry-envelope"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


def api(base, path):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


envelopes = [envelope(index) for index in range(EVENTS)]
with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
    jobs = [pool.submit(post, base, body) for _, body in envelopes for base in (url_a, url_b)]
    statuses = collections.Counter(job.result() for job in jobs)

problems = []
if statuses != {200: 2 * EVENTS}:
    problems.append(f"expected {2 * EVENTS} answers 200, got {dict(statuses)}")
issues = api(url_b, f"/api/0/projects/{project}/issues")
expected_events = collections.Counter(f"Error{index % ISSUES}" for index, _ in envelopes)
expected_users = {name: len({index % USERS for index, _ in envelopes if f"Error{index % ISSUES}" == name}) for name in expected_events}
if len(issues) != ISSUES:
    problems.append(f"expected {ISSUES} issues, got {len(issues)}")
for issue in issues:
    name = issue["title"].split(":")[0]
    if issue["event_count"] != expected_events[name]:
        problems.append(f"{name}: event_count {issue['event_count']}, expected {expected_events[name]}")
    if issue["user_count"] != expected_users[name]:
        problems.append(f"{name}: user_count {issue['user_count']}, expected {expected_users[name]}")
    stored = api(url_a, f"/api/0/issues/{issue['id']}/events?limit=1000")
    if len(stored) != expected_events[name]:
        problems.append(f"{name}: {len(stored)} events stored, expected {expected_events[name]}")
for problem in problems:
    print("two collectors:", problem)
print(f"two collectors: {EVENTS} envelopes sent to each, {len(issues)} issues, "
      f"{sum(issue['event_count'] for issue in issues)} events counted")
sys.exit(1 if problems else 0)
