"""A full disk: ingest answers 503 storage.full, nothing acknowledged is lost, ingest resumes.

usage: disk_full_ingest.py DSN URL TOKEN BALLAST_FILE LOG_FILE

The collector's SQLite database is on a small volume that BALLAST_FILE also takes space on. Four
clients send envelopes of about 16 KB (incompressible) until the volume is full: then every answer
must be 503 `storage.full` with Retry-After (never 500), `/health` must answer 503 with storage
"full", `/metrics` must count the failures, and the collector must have logged them at `error`
(LOG_FILE: its standard error). Then BALLAST_FILE is deleted (space returns): `/health` must be
ok again, the refused events, sent again, must be acknowledged, and every acknowledged event must
be stored (read back through the API).
"""
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid

from ingest_client import get, post_envelope

CLIENTS = 4


def classify(status, headers, body):
    """'ok', 'full' (503 storage.full with Retry-After) or a description of anything else."""
    headers = {name.lower(): value for name, value in headers.items()}
    if status == 200:
        return "ok"
    try:
        code = json.loads(body).get("code")
    except ValueError:
        code = None
    if status == 503 and code == "storage.full" and headers.get("retry-after", "").isdigit():
        return "full"
    return f"{status} {code} retry-after={headers.get('retry-after')!r}"


def main(dsn, url, token, ballast, log_file):
    parsed = urllib.parse.urlparse(dsn)
    key, project = parsed.username, parsed.path.strip("/")
    lock = threading.Lock()
    acked, refused, bad = [], [], []
    full_in_a_row = [0]
    stop = threading.Event()

    def client():
        while not stop.is_set():
            event_id = uuid.uuid4().hex
            status, headers, body = post_envelope(url, project, key, event_id, padding=8_000)
            outcome = classify(status, headers, body)
            with lock:
                if outcome == "ok":
                    acked.append(event_id)
                    full_in_a_row[0] = 0
                elif outcome == "full":
                    refused.append(event_id)
                    full_in_a_row[0] += 1
                    if full_in_a_row[0] >= 20:
                        stop.set()
                else:
                    bad.append(outcome)
                    if len(bad) >= 20:
                        stop.set()

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    stop.set()
    failures = []
    print(f"disk full: {len(acked)} events acknowledged, {len(refused)} refused as storage.full before 20 in a row")
    if bad:
        failures.append(f"{len(bad)} answers neither 200 nor 503 storage.full with Retry-After, e.g. {bad[:3]}")
    if len(refused) < 20 or len(acked) < 50:
        failures.append("the volume never filled up (or filled before 50 events)")

    status, headers, body = get(f"{url}/health")
    if status != 503 or json.loads(body or b"{}").get("storage") != "full" or "retry-after" not in {k.lower() for k in headers}:
        failures.append(f"/health on a full disk: {status} {body[:200]!r}")
    status, _, body = get(f"{url}/metrics")
    if b'collector_storage_failures_total{kind="full"}' not in body or b'collector_storage_state{state="full"} 1' not in body:
        failures.append("/metrics does not show the full disk")
    with open(log_file, errors="replace") as handle:
        log = handle.read()
    if not any("level=error" in line and "storage.full" in line for line in log.splitlines()):
        failures.append("no refusal logged at error")
    if any("level=info" in line and "storage.full" in line for line in log.splitlines()):
        failures.append("a storage.full refusal logged at info")

    # Space returns.
    os.remove(ballast)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, _, body = get(f"{url}/health")
        if status == 200:
            break
        time.sleep(0.5)
    if status != 200 or json.loads(body).get("storage") != "ok":
        failures.append(f"/health after space returned: {status} {body[:200]!r}")
    resent = 0
    for event_id in refused[:100]:
        status, headers, body = post_envelope(url, project, key, event_id, padding=8_000)
        if classify(status, headers, body) == "ok":
            acked.append(event_id)
            resent += 1
    if resent != min(len(refused), 100):
        failures.append(f"only {resent} of {min(len(refused), 100)} refused events acknowledged when sent again")

    missing = [event_id for event_id in acked
               if get(f"{url}/api/0/projects/{project}/events/{event_id}", token)[0] != 200]
    print(f"disk full: {len(acked) - len(missing)} of {len(acked)} acknowledged events stored "
          f"({resent} of them sent again after space returned)")
    if missing:
        failures.append(f"{len(missing)} acknowledged events lost, e.g. {missing[:3]}")
    for failure in failures:
        print("disk full: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
