"""PostgreSQL restarted under load: no acknowledged event is lost, the outage is answered 503.

usage: pg_restart_ingest.py DSN URL TOKEN PG_DIR

Four clients send envelopes continuously. Like an SDK, a client sends an event again after a 503
(waiting its Retry-After, at most 1 s here) and goes on to a new event only after a 200. Once 100
events are acknowledged, PostgreSQL is stopped (`postgres.sh pause`: pg_ctl -m fast stop), and
started again 4 s later (`postgres.sh resume`); while it is away `/health` must answer 503 with
storage "unavailable". The clients keep sending until 100 more events are acknowledged after the
restart (at most 60 s). Then: every answer was 200 or a 503 with Retry-After (no 500, no other
status, no connection error), at least one 503 `storage.unavailable` was seen, every acknowledged
event is stored (read back through the API), and `/health` is ok.
"""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

from ingest_client import get, post_envelope

CLIENTS = 4


def main(dsn, url, token, pg_dir):
    parsed = urllib.parse.urlparse(dsn)
    key, project = parsed.username, parsed.path.strip("/")
    scripts = os.path.dirname(os.path.abspath(__file__))
    lock = threading.Lock()
    acked = []           # (event id, time acknowledged)
    answers = {}         # status -> count
    bad = []             # descriptions of answers that are not 200 or 503 with Retry-After
    codes = {}           # 503 codes -> count
    stop = threading.Event()

    def client():
        event_id = uuid.uuid4().hex
        while not stop.is_set():
            try:
                status, headers, body = post_envelope(url, project, key, event_id)
            except Exception as error:  # noqa: BLE001 - any connection failure is a failure here
                with lock:
                    bad.append(f"connection error: {error!r}")
                time.sleep(0.5)
                continue
            headers = {name.lower(): value for name, value in headers.items()}
            with lock:
                answers[status] = answers.get(status, 0) + 1
                if status == 200:
                    acked.append((event_id, time.monotonic()))
                elif status == 503 and headers.get("retry-after", "").isdigit():
                    try:
                        code = json.loads(body).get("code")
                    except ValueError:
                        code = None
                    codes[code] = codes.get(code, 0) + 1
                else:
                    bad.append(f"{status} {headers.get('retry-after')!r} {body[:200]!r}")
            if status == 200:
                event_id = uuid.uuid4().hex
            elif status == 503:
                time.sleep(min(int(headers.get("retry-after", "1")), 1))
            else:
                time.sleep(0.2)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    failures = []

    def acked_count():
        with lock:
            return len(acked)

    deadline = time.monotonic() + 60
    while acked_count() < 100 and time.monotonic() < deadline:
        time.sleep(0.05)
    if acked_count() < 100:
        failures.append(f"only {acked_count()} events acknowledged before the restart")
    acked_before = acked_count()
    subprocess.run([os.path.join(scripts, "postgres.sh"), "pause", pg_dir], check=True)
    stopped_at = time.monotonic()
    time.sleep(1)
    status, _, body = get(f"{url}/health")
    health_during = (status, body)
    time.sleep(max(0.0, 4 - (time.monotonic() - stopped_at)))
    subprocess.run([os.path.join(scripts, "postgres.sh"), "resume", pg_dir], check=True)
    resumed_at = time.monotonic()
    deadline = resumed_at + 60
    while time.monotonic() < deadline:
        with lock:
            after = sum(1 for _, at in acked if at > resumed_at)
        if after >= 100:
            break
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)

    with lock:
        first_after = min((at for _, at in acked if at > resumed_at), default=None)
        after = sum(1 for _, at in acked if at > resumed_at)
        ids = [event_id for event_id, _ in acked]
    print(f"pg restart: {acked_before} events acknowledged before the stop, {after} after the restart "
          f"(first {'-' if first_after is None else f'{first_after - resumed_at:.1f} s'} after it); answers {answers}; 503 codes {codes}")
    if after < 100:
        failures.append(f"only {after} events acknowledged in the 60 s after the restart")
    if bad:
        failures.append(f"{len(bad)} answers neither 200 nor 503 with Retry-After, e.g. {bad[:3]}")
    if codes.get("storage.unavailable", 0) < 1:
        failures.append("no 503 storage.unavailable during the outage")
    try:
        health = json.loads(health_during[1])
    except ValueError:
        health = {}
    if health_during[0] != 503 or health.get("storage") != "unavailable":
        failures.append(f"/health while PostgreSQL was stopped: {health_during[0]} {health_during[1][:200]!r}")
    status, _, body = get(f"{url}/health")
    if status != 200 or json.loads(body).get("storage") != "ok":
        failures.append(f"/health after the restart: {status} {body[:200]!r}")
    missing = [event_id for event_id in ids
               if get(f"{url}/api/0/projects/{project}/events/{event_id}", token)[0] != 200]
    print(f"pg restart: {len(ids) - len(missing)} of {len(ids)} acknowledged events stored")
    if missing:
        failures.append(f"{len(missing)} acknowledged events lost, e.g. {missing[:3]}")
    status, _, body = get(f"{url}/metrics")
    if b'collector_storage_failures_total{kind="unavailable"}' not in body:
        failures.append("/metrics counts no unavailable storage failure")
    for failure in failures:
        print("pg restart: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
