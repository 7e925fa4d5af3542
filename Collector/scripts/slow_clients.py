#!/usr/bin/env python3
"""Slow and idle clients against a collector whose open-file limit is 1,024 (stdlib only).

    slow_clients.py caps   BIN DATA_DIR   # the caps and timeouts at their defaults (timeouts shortened)
    slow_clients.py file-limit BIN DATA_DIR   # a cap above the file limit: lowered, or the soft limit raised

`caps`: starts `BIN serve` under `ulimit -n 1024` (so 896 connections in total, 256 per address, 32
of them kept for addresses with none open) with an 8 s header timeout and a 12 s idle timeout; opens
500 keep-alive connections that make one request and then stay idle (from 127.0.0.2-6), then 1,100
connections that send a request head a byte a second and never finish it (from 127.0.0.10-13,
275 each; 25 at a time, so that the collector accepts them as they come). Then, from 127.0.0.1:
/health and an envelope POST answer within 2 s, twice; the connections over a cap are closed
within 1.5 s of connecting, none is admitted beyond the caps; the idle ones are closed about 12 s
after their answer, the slow ones about 8 s after connecting
(the bytes they drip do not extend it); /metrics counts each kind; nothing is left open.

`file-limit`: --max-connections 5000 under a hard limit of 1,024: the collector lowers the cap to
896 with a warning; the same slow connections fill it and leave at least 32 descriptors free;
/health and an envelope POST answer meanwhile. Then under a soft limit of 1,024 and a hard limit
of 8,192: the collector raises its soft limit to 5,128 and keeps the cap. (Out of descriptors, a
process can be ended by libdispatch, whose worker monitor traps when it cannot open
/proc/<tid>/stat: the collector does not let connections take the last ones.)

Prints one line per check and exits non-zero when one fails.
"""
import http.client
import json
import os
import re
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time
import uuid

FILE_LIMIT = 1024
HEADER_TIMEOUT = 8.0
IDLE_TIMEOUT = 12.0
IDLE_CLIENTS = [f"127.0.0.{n}" for n in range(2, 7)]       # 5 x 100
SLOW_CLIENTS = [f"127.0.0.{n}" for n in range(10, 14)]     # 4 x 275
IDLE_PER_ADDRESS = 100
SLOW_PER_ADDRESS = 275
# The collector's defaults (Configuration.swift, ConnectionLimits) for a 1,024 file limit.
MAX_TOTAL = FILE_LIMIT - 128
MAX_PER_ADDRESS = 256
RESERVED_FOR_NEW = 32

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_collector(binary, data_dir, extra, limits=(FILE_LIMIT, FILE_LIMIT)):
    os.makedirs(data_dir, exist_ok=True)
    port = free_port()
    token = "slow-" + uuid.uuid4().hex
    out = open(os.path.join(data_dir, "collector.out"), "w")
    err = open(os.path.join(data_dir, "collector.err"), "w")

    def limit_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)

    proc = subprocess.Popen(
        [binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", os.path.join(data_dir, "data"),
         "--header-timeout", str(HEADER_TIMEOUT), "--idle-timeout", str(IDLE_TIMEOUT),
         "--rate-limit", "100000", "--rate-limit-burst", "100000"] + extra,
        stdout=out, stderr=err, preexec_fn=limit_files, env=dict(os.environ, SHIELD_COLLECTOR_API_TOKEN=token))
    dsn = None
    for _ in range(300):
        text = open(os.path.join(data_dir, "collector.out")).read()
        m = re.search(r"^first project DSN: (\S+)", text, re.M)
        if m:
            dsn = m.group(1)
            break
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    if dsn is None:
        proc.kill()
        sys.exit("the collector did not start: " + open(os.path.join(data_dir, "collector.err")).read()[-2000:])
    return proc, port, dsn, token


def timed_request(port, method, path, body=None, headers=None, timeout=2.0):
    """One request on a new connection from 127.0.0.1: (status, seconds) or (None, seconds)."""
    start = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        response.read()
        conn.close()
        return response.status, time.monotonic() - start
    except (OSError, http.client.HTTPException):
        return None, time.monotonic() - start


def envelope(dsn):
    key = re.match(r"https?://([0-9a-f]+)@", dsn).group(1)
    project = dsn.rstrip("/").rsplit("/", 1)[1]
    event_id = uuid.uuid4().hex
    body = (json.dumps({"event_id": event_id}) + "\n" + json.dumps({"type": "event"}) + "\n"
            + json.dumps({"event_id": event_id, "message": "sent while slow clients hold connections", "level": "error",
                          "timestamp": time.time(), "platform": "python"}) + "\n").encode()
    headers = {"X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={key}", "Content-Type": "application/x-sentry-envelope"}
    return f"/api/{project}/envelope/", body, headers


class Conn:
    def __init__(self, kind, source, sock, opened):
        self.kind, self.source, self.sock, self.opened = kind, source, sock, opened
        self.answered = None   # idle clients: when their answer arrived
        self.closed = None     # when the collector closed it (EOF or reset)
        self.buffer = b""


def open_connection(kind, source, port, blocking_connect=True):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((source, 0))
    opened = time.monotonic()
    if blocking_connect:
        sock.settimeout(5)
        sock.connect(("127.0.0.1", port))
        sock.setblocking(False)
    else:
        sock.setblocking(False)
        err = sock.connect_ex(("127.0.0.1", port))
        if err not in (0, 115):  # EINPROGRESS
            raise OSError(err, os.strerror(err))
    return Conn(kind, source, sock, opened)


def pump(selector, conns_by_fd, until, drip=None, drip_every=1.0):
    """Reads whatever the collector sends (recording answers and closes) until `until`; every
    `drip_every` seconds sends one more header byte on each open slow connection."""
    next_drip = time.monotonic() + drip_every
    first = True
    while True:
        now = time.monotonic()
        if now >= until and not first:
            return
        first = False
        timeout = min(until, next_drip) - now
        for key, _ in selector.select(timeout=max(0.0, timeout)):
            conn = conns_by_fd[key.fd]
            try:
                data = conn.sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            now = time.monotonic()
            if not data:
                conn.closed = now
                selector.unregister(conn.sock)
                continue
            conn.buffer += data
            if conn.answered is None and b"\r\n\r\n" in conn.buffer:
                conn.answered = now
        if drip is not None and time.monotonic() >= next_drip:
            for conn in drip:
                if conn.closed is None:
                    try:
                        conn.sock.send(b"X")
                    except OSError:
                        pass
            next_drip = time.monotonic() + drip_every


def metrics(port):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
    except (OSError, http.client.HTTPException) as error:
        print(f"     /metrics: {error}")
        return {}
    values = {}
    for line in text.splitlines():
        m = re.match(r'collector_connections_(closed_total\{reason="(\w+)"\}|open) (\d+)', line)
        if m:
            values[m.group(2) or "open"] = int(m.group(3))
    return values


def stop(proc, label):
    if proc.poll() is not None:
        check(False, f"{label}: the collector exited on its own (status {proc.returncode})")
        return
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    check(code == 0, f"{label}: graceful shutdown on SIGTERM (exit {code})")


def caps(binary, data_dir):
    proc, port, dsn, _ = start_collector(binary, data_dir, [])
    path, body, headers = envelope(dsn)
    selector = selectors.DefaultSelector()
    by_fd = {}

    # 500 keep-alive connections, one answered request each, then idle.
    idle = []
    for source in IDLE_CLIENTS:
        for _ in range(IDLE_PER_ADDRESS):
            conn = open_connection("idle", source, port)
            conn.sock.send(b"GET /health HTTP/1.1\r\nHost: collector\r\n\r\n")
            selector.register(conn.sock, selectors.EVENT_READ)
            by_fd[conn.sock.fileno()] = conn
            idle.append(conn)
            pump(selector, by_fd, 0)  # note answers and closes as they come
            if len(idle) % 25 == 0:
                pump(selector, by_fd, time.monotonic() + 0.1)
    pump(selector, by_fd, time.monotonic() + 1.0)
    answered = sum(1 for c in idle if c.answered is not None and c.buffer.startswith(b"HTTP/1.1 200"))
    check(answered == len(idle), f"caps: {answered} of {len(idle)} keep-alive connections answered 200, then left idle")

    # 1,100 connections that never finish their request head.
    slow = []
    connect_failures = 0
    for source in SLOW_CLIENTS:
        for _ in range(SLOW_PER_ADDRESS):
            if connect_failures >= 3:
                break
            try:
                conn = open_connection("slow", source, port)
            except OSError as error:
                connect_failures += 1
                check(False, f"caps: connect from {source} (the collector does not accept): {error}")
                continue
            try:
                conn.sock.send(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: collector\r\nX-Slow: ")
            except OSError:
                pass
            selector.register(conn.sock, selectors.EVENT_READ)
            by_fd[conn.sock.fileno()] = conn
            slow.append(conn)
            pump(selector, by_fd, 0)
            if len(slow) % 25 == 0:
                pump(selector, by_fd, time.monotonic() + 0.1, drip=slow)
    opened_all = time.monotonic()
    print(f"     opened the slow connections in {opened_all - slow[0].opened:.2f} s")
    pump(selector, by_fd, opened_all + 1.0, drip=slow)

    # Health checks and ingest from another address, while the slow and idle ones hold their places.
    # The places kept for new addresses admit an address with no connection open: one connection
    # at a time (the collector releases a place once it has seen the close), or both on one.
    status, seconds = timed_request(port, "GET", "/health")
    check(status == 200 and seconds < 2, f"caps: /health during the attack: {status} in {seconds:.2f} s")
    pump(selector, by_fd, time.monotonic() + 0.5, drip=slow)
    status, seconds = timed_request(port, "POST", path, body=body, headers=headers)
    check(status == 200 and seconds < 2, f"caps: envelope POST during the attack: {status} in {seconds:.2f} s")
    pump(selector, by_fd, time.monotonic() + 0.5, drip=slow)
    try:
        start = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/health")
        health = conn.getresponse()
        health.read()
        conn.request("POST", path, body=body, headers=headers)
        ingest = conn.getresponse()
        ingest.read()
        conn.close()
        statuses = (health.status, ingest.status)
    except (OSError, http.client.HTTPException) as error:
        statuses = (str(error),)
    seconds = time.monotonic() - start
    check(statuses == (200, 200) and seconds < 2, f"caps: /health and an envelope POST on one connection during the attack: {statuses} in {seconds:.2f} s")
    pump(selector, by_fd, time.monotonic() + 0.5, drip=slow)
    held = metrics(port)

    # Wait past both timeouts (from the last connection opened), dripping all along.
    pump(selector, by_fd, opened_all + max(HEADER_TIMEOUT, IDLE_TIMEOUT) + 4.0, drip=slow)

    refused = [c for c in slow if c.closed is not None and c.closed - c.opened < 1.5]
    admitted = [c for c in slow if c not in refused]
    per_address = {s: sum(1 for c in admitted if c.source == s) for s in SLOW_CLIENTS}
    check(len(refused) + len(admitted) == SLOW_PER_ADDRESS * len(SLOW_CLIENTS), f"caps: {len(slow)} slow connections opened")
    check(len(admitted) + len(idle) <= MAX_TOTAL, f"caps: {len(admitted)} slow + {len(idle)} idle admitted, at most {MAX_TOTAL} in total")
    check(len(admitted) >= MAX_TOTAL - RESERVED_FOR_NEW - len(idle) and len(refused) > 0,
          f"caps: {len(refused)} slow connections over a cap closed within 1.5 s of connecting")
    check(all(n <= MAX_PER_ADDRESS for n in per_address.values()),
          f"caps: admitted per address {sorted(per_address.values(), reverse=True)}, at most {MAX_PER_ADDRESS}")
    late = [c for c in admitted if c.closed is None or not (HEADER_TIMEOUT - 0.5 <= c.closed - c.opened <= HEADER_TIMEOUT + 3)]
    header_times = [c.closed - c.opened for c in admitted if c.closed is not None]
    check(not late and header_times, f"caps: {len(admitted)} admitted slow connections closed by the {HEADER_TIMEOUT:g} s header timeout "
          f"({min(header_times or [0]):.2f}-{max(header_times or [0]):.2f} s after connecting; {len(late)} outside)")
    idle_times = [c.closed - c.answered for c in idle if c.closed is not None and c.answered is not None]
    wrong = len(idle) - sum(1 for t in idle_times if IDLE_TIMEOUT - 0.5 <= t <= IDLE_TIMEOUT + 3)
    check(wrong == 0, f"caps: {len(idle)} idle connections closed by the {IDLE_TIMEOUT:g} s idle timeout "
          f"({min(idle_times or [0]):.2f}-{max(idle_times or [0]):.2f} s after their answer; {wrong} outside)")

    after = metrics(port)
    print(f"     metrics while held: {held}; after: {after}")
    check(held.get("open", 0) >= len(idle) + len(admitted), f"caps: collector_connections_open {held.get('open')} while held")
    check(after.get("over_per_address", 0) >= 1 and after.get("over_total", 0) >= 1
          and after.get("over_per_address", 0) + after.get("over_total", 0) == len(refused),
          f"caps: /metrics counts the refused ({after.get('over_per_address')} over_per_address + {after.get('over_total')} over_total)")
    check(after.get("header_timeout", 0) == len(admitted) and after.get("idle_timeout", 0) == len(idle),
          f"caps: /metrics counts header_timeout {after.get('header_timeout')} and idle_timeout {after.get('idle_timeout')}")
    check(after.get("open", -1) <= 1, f"caps: collector_connections_open {after.get('open')} afterwards")
    status, seconds = timed_request(port, "GET", "/health")
    check(status == 200, f"caps: /health afterwards: {status} in {seconds:.2f} s")
    for conn in idle + slow:
        conn.sock.close()
    stop(proc, "caps")


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def soft_file_limit(pid):
    """The soft "Max open files" of /proc/PID/limits (None: unreadable)."""
    try:
        for line in open(f"/proc/{pid}/limits"):
            if line.startswith("Max open files"):
                return int(line.split()[3])
    except (OSError, ValueError, IndexError):
        pass
    return None


def file_limit(binary, data_dir):
    # A cap of 5,000 under a hard limit of 1,024: lowered to 896, so that the slow clients never
    # take the last descriptors (a process out of them can be ended by libdispatch's worker monitor).
    proc, port, dsn, _ = start_collector(binary, os.path.join(data_dir, "hard"),
                                         ["--max-connections", "5000", "--max-connections-per-address", "5000"])
    err = open(os.path.join(data_dir, "hard", "collector.err")).read()
    check("max connections lowered to the open-file limit minus the reserve" in err and "max_connections=896" in err,
          "file-limit: a cap above the hard limit is lowered to 896, with a warning")
    selector = selectors.DefaultSelector()
    by_fd = {}
    slow = []
    peak = 0
    for source in SLOW_CLIENTS:
        for _ in range(SLOW_PER_ADDRESS):
            try:
                conn = open_connection("slow", source, port)
                conn.sock.send(b"GET /health HTTP/1.1\r\nHost: collector\r\nX-Slow: ")
            except OSError as error:
                check(False, f"file-limit: connect from {source}: {error}")
                break
            selector.register(conn.sock, selectors.EVENT_READ)
            by_fd[conn.sock.fileno()] = conn
            slow.append(conn)
            pump(selector, by_fd, 0)
            if len(slow) % 25 == 0:
                pump(selector, by_fd, time.monotonic() + 0.1, drip=slow)
                peak = max(peak, fd_count(proc.pid) or 0)
    pump(selector, by_fd, time.monotonic() + 1.0, drip=slow)
    peak = max(peak, fd_count(proc.pid) or 0)
    # One request at a time from 127.0.0.1, each once the previous has closed (that address gets
    # one of the places kept for addresses with none open).
    status, seconds = timed_request(port, "GET", "/health")
    check(status == 200, f"file-limit: /health while the cap is full: {status} in {seconds:.2f} s")
    pump(selector, by_fd, time.monotonic() + 0.5, drip=slow)
    path, body, headers = envelope(dsn)
    status, seconds = timed_request(port, "POST", path, body=body, headers=headers)
    check(status == 200, f"file-limit: an envelope POST while the cap is full: {status} in {seconds:.2f} s")
    pump(selector, by_fd, time.monotonic() + 0.5, drip=slow)
    held = metrics(port)
    peak = max(peak, fd_count(proc.pid) or 0)
    print(f"     descriptors at most {peak} of {FILE_LIMIT}; metrics while held: {held}")
    # `open` counts the /metrics request's own connection.
    check(held.get("open", 0) - 1 == MAX_TOTAL - RESERVED_FOR_NEW and held.get("over_total", 0) >= 1,
          f"file-limit: the slow clients fill the lowered cap, the rest are refused (collector_connections_open "
          f"{held.get('open')}: {MAX_TOTAL - RESERVED_FOR_NEW} and /metrics; over_total {held.get('over_total')})")
    check(FILE_LIMIT - peak >= 32, f"file-limit: descriptors left while the cap is full: {FILE_LIMIT - peak}")
    for conn in slow:
        conn.sock.close()
    check(proc.poll() is None, "file-limit: the collector is still running")
    stop(proc, "file-limit")

    # The same cap under a soft limit of 1,024 and a hard limit of 8,192: the soft limit is raised
    # to what the cap needs (5,000 + the reserve of 128), and the cap kept.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard = 8192 if hard == resource.RLIM_INFINITY else min(hard, 8192)
    proc, port, dsn, _ = start_collector(binary, os.path.join(data_dir, "soft"), ["--max-connections", "5000"],
                                         limits=(FILE_LIMIT, hard))
    err = open(os.path.join(data_dir, "soft", "collector.err")).read()
    soft = soft_file_limit(proc.pid)
    check(soft == 5128, f"file-limit: the soft limit is raised to what the cap needs (5,128): {soft}")
    check("open-file limit raised for max connections" in err and "max_connections=5000" in err
          and "max connections lowered" not in err, "file-limit: the raise is logged and the cap of 5,000 kept")
    status, _ = timed_request(port, "GET", "/health")
    check(status == 200, "file-limit: /health answers after the raise")
    stop(proc, "file-limit-raised")


def main():
    mode, binary, data_dir = sys.argv[1:4]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 8192) if hard != resource.RLIM_INFINITY else 8192
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 2000:
        sys.exit("this test needs 2,000 file descriptors for its clients")
    os.makedirs(data_dir, exist_ok=True)
    {"caps": caps, "file-limit": file_limit}[mode](binary, data_dir)
    print(f"{mode}: {'failed' if failures else 'passed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
