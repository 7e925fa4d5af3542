"""kill -9 during ingest loses no acknowledged event.

usage: kill9_ingest.py send DSN URL PID ACKED_FILE   sends events from 8 threads, kills PID with
                                                     SIGKILL after 150 acknowledgements, writes the
                                                     acknowledged event ids to ACKED_FILE
       kill9_ingest.py verify URL PROJECT TOKEN ACKED_FILE
                                                     checks every acknowledged id is stored
"""
import json
import os
import signal
import sys
import threading
import urllib.parse
import uuid

from ingest_client import get, post_envelope


def send(dsn, url, pid, acked_file):
    parsed = urllib.parse.urlparse(dsn)
    key, project = parsed.username, parsed.path.strip("/")
    acked, lock, killed = [], threading.Lock(), threading.Event()

    def worker():
        while True:
            event_id = uuid.uuid4().hex
            try:
                if post_envelope(url, project, key, event_id, timeout=10)[0] != 200:
                    continue
            except Exception:
                if killed.is_set():
                    return
                continue
            with lock:
                acked.append(event_id)
                if len(acked) == 150 and not killed.is_set():
                    os.kill(pid, signal.SIGKILL)
                    killed.set()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    with open(acked_file, "w") as handle:
        json.dump(acked, handle)
    print(f"kill -9: {len(acked)} events acknowledged before and while the collector was killed")
    return 0 if killed.is_set() and len(acked) >= 150 else 1


def verify(url, project, token, acked_file):
    with open(acked_file) as handle:
        acked = json.load(handle)
    missing = []
    for event_id in acked:
        if get(f"{url}/api/0/projects/{project}/events/{event_id}", token, timeout=10)[0] != 200:
            missing.append(event_id)
    print(f"kill -9: {len(acked) - len(missing)} of {len(acked)} acknowledged events stored after restart")
    return 1 if missing or not acked else 0


if sys.argv[1] == "send":
    sys.exit(send(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]))
sys.exit(verify(*sys.argv[2:6]))
