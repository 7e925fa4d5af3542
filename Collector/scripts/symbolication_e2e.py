"""Server-side symbolication end to end: `sentry-cli debug-files upload` of a stripped binary's
debug file, and crashes of that binary reported by CrashShield's SDK.

usage: symbolication_e2e.py SHIELD_BINARY SENTRY_CLI DSN COLLECTOR_URL API_TOKEN WORK_DIR ADMIN_PASSWORD CRASH_SOURCE

The `shield` binary is split as a team ships it (objcopy --only-keep-debug for the debug file;
--strip-debug --strip-unneeded for the binary, without a debuglink, kept in a directory of its
own, so neither the SDK's own symbolication at the next start nor anything else on this machine
can find its symbols). Then:
  1. the stripped binary crashes (`shield reporting-probe --crash-after-launch`: SIGSEGV in
     csc_crash_segv) and its next start reports it; the event as received names no function and no
     line for its crashing frame, and the collector cannot symbolicate it yet (debug_status missing);
  2. sentry-cli (CLI path SENTRY_CLI) uploads the debug file to the project with the API token and
     `--wait`; it reports the debug id Sentry derives from the binary's GNU build id;
  3. the binary crashes again; both events are in one issue (grouping by image and offset, as
     received) and the collector's symbolicated event API names csc_crash_segv, csc_crash_kinds.c
     and the line of the faulting store in CRASH_SOURCE for the crashing frame of both events,
     while each event as received still has no function; the issue, named after an address when
     it was created, is renamed after csc_crash_segv; the issue page shows function and line;
  4. refusals: sentry-cli with a wrong token fails; a chunk not named by its SHA-1 is 400, a chunk
     above chunkSize is 413.
Every crash runs in a child process with a timeout. Prints one line per check; exits 1 when any failed.
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from e2e_support import check, dashboard_page, problems

shield, sentry_cli, dsn, base, token, work, admin_password, crash_source = sys.argv[1:9]
project = urllib.parse.urlparse(dsn).path.strip("/").split("/")[-1]
CHILD_TIMEOUT = 60
POLL_SECONDS = 30


def api(path, method="GET", body=None, headers=None, auth=True):
    fields = dict(headers or {})
    if auth:
        fields["Authorization"] = "Bearer " + token
    data = body
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
        fields["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=fields)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        text = error.read().decode(errors="replace")
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text


def run(arguments, **options):
    return subprocess.run(arguments, capture_output=True, encoding="utf-8", errors="replace", timeout=CHILD_TIMEOUT, **options)


def crash_and_report(binary, directory, release):
    """The binary crashes once (SIGSEGV in csc_crash_segv) and its next start reports the crash."""
    env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
    # No debuginfod or debug-file directories for the SDK's own llvm-symbolizer at the next start.
    env.pop("DEBUGINFOD_URLS", None)
    common = ["reporting-probe", "--dir", directory, "--dsn", dsn, "--release", release, "--exit-flush-timeout", "10"]
    try:
        crashed = subprocess.run([binary] + common + ["--crash-after-launch"], capture_output=True, timeout=CHILD_TIMEOUT, env=env)
        check(crashed.returncode == -signal.SIGSEGV, "the stripped binary dies of SIGSEGV", f"status {crashed.returncode}")
        reported = subprocess.run([binary] + common, capture_output=True, encoding="utf-8", errors="replace",
                                  timeout=CHILD_TIMEOUT, env=env)
        check(reported.returncode == 0 and '"last_run": "crashed"' in reported.stdout,
              "its next start finds the crash and exits cleanly", f"status {reported.returncode}: {reported.stderr[-300:]}")
    except subprocess.TimeoutExpired:
        check(False, "the stripped binary's crash and next start finish in time", "timeout")


def events_of_release(release):
    found = []
    status, issues = api(f"/api/0/projects/{project}/issues")
    for issue in issues if status == 200 else []:
        _, summaries = api(f"/api/0/issues/{issue['id']}/events?limit=1000")
        for summary in summaries:
            if summary.get("release") == release:
                found.append((issue, summary["event_id"]))
    return found


def poll(fetch, count):
    deadline = time.monotonic() + POLL_SECONDS
    while True:
        value = fetch()
        if len(value) >= count or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def crashing_frame(event):
    """The innermost frame of the crash's stack (frames are caller first)."""
    frames = [frame for exception in (event.get("exception") or {}).get("values", [])
              for frame in (exception.get("stacktrace") or {}).get("frames", [])]
    return frames[-1] if frames else {}


def expected_line():
    """The line of the faulting store in csc_crash_segv, read from its source."""
    lines = open(crash_source, encoding="utf-8").read().split("\n")
    start = next(index for index, line in enumerate(lines) if re.match(r".*\bvoid csc_crash_segv\(void\)\s*\{", line))
    return next(index for index in range(start, len(lines)) if lines[index].strip().startswith("*null_pointer ="))+ 1


def debug_id_of(binary):
    """Sentry's debug id of an ELF file: its GNU build id's first 16 bytes as a little-endian GUID."""
    notes = run(["readelf", "-n", binary]).stdout
    build_id = re.search(r"Build ID:\s*([0-9a-f]+)", notes).group(1)
    raw = bytes.fromhex(build_id)[:16].ljust(16, b"\0")
    swapped = raw[3::-1] + raw[5:3:-1] + raw[7:5:-1] + raw[8:]
    text = swapped.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}", build_id


def main():
    app_dir = os.path.join(work, "app")
    os.makedirs(app_dir, exist_ok=True)
    debug_file = os.path.join(work, "shield.debug")
    stripped = os.path.join(app_dir, "shield")
    subprocess.run(["objcopy", "--only-keep-debug", shield, debug_file], check=True)
    subprocess.run(["objcopy", "--strip-debug", "--strip-unneeded", shield, stripped], check=True)
    symbols = run(["nm", stripped])
    check("no symbols" in symbols.stderr and not symbols.stdout.strip(), "the stripped binary has no symbol table",
          symbols.stdout[:200] + symbols.stderr[:200])
    check("csc_crash_segv" not in run(["nm", "-D", stripped]).stdout, "csc_crash_segv is not among its dynamic symbols")
    debug_id, build_id = debug_id_of(stripped)
    line = expected_line()

    # 1. A crash before the debug file is on the collector.
    release = "symbolication-e2e@1.0"
    crash_and_report(stripped, os.path.join(work, "reports"), release)
    stored = poll(lambda: events_of_release(release), 1)
    if not check(len(stored) == 1, "the collector stored the first crash", stored):
        return
    first_issue, first_event = stored[0]
    _, received = api(f"/api/0/projects/{project}/events/{first_event}")
    frame = crashing_frame(received)
    image = next((image for image in (received.get("debug_meta") or {}).get("images", [])
                  if image.get("code_file") == stripped), {})
    check(image.get("debug_id") == debug_id and image.get("code_id") == build_id,
          "the event names the stripped binary by its build id (debug_id, code_id)", image)
    check(frame.get("instruction_addr") and frame.get("function") is None and frame.get("lineno") is None,
          "as received, the crashing frame has an address but no function and no line", frame)
    status, before = api(f"/api/0/projects/{project}/events/{first_event}/symbolicated")
    check(status == 200 and crashing_frame(before).get("function") is None, "without the debug file it stays unsymbolicated",
          crashing_frame(before) if status == 200 else status)
    statuses = [image.get("debug_status") for image in (before.get("debug_meta") or {}).get("images", [])
                if image.get("code_file") == stripped] if status == 200 else []
    check(statuses == ["missing"], "its image's debug_status is missing", statuses)

    # 2. Refusals, then sentry-cli's upload.
    denied = run([sentry_cli, "--url", base, "--auth-token", "wrong-" + token, "debug-files", "upload",
                  "--org", "any", "--project", project, debug_file])
    check(denied.returncode != 0, "sentry-cli with a wrong token fails", denied.stdout[-300:])
    chunk = b"\x7fELF not really"
    boundary = "e2e-boundary"
    def multipart(name, data):
        return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    form = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    status, answer = api("/api/0/organizations/any/chunk-upload/", "POST", multipart("0" * 40, chunk), form)
    check(status == 400 and answer.get("code") == "debug_files.checksum", "a chunk not named by its SHA-1 is refused with 400",
          (status, answer))
    _, options = api("/api/0/organizations/any/chunk-upload/")
    big = b"\0" * (options["chunkSize"] + 1)
    status, answer = api("/api/0/organizations/any/chunk-upload/", "POST", multipart(hashlib.sha1(big).hexdigest(), big), form)
    check(status == 413, "a chunk above chunkSize is refused with 413", (status, answer))

    upload = run([sentry_cli, "--url", base, "--auth-token", token, "debug-files", "upload", "--org", "any",
                  "--project", project, "--wait", debug_file])
    check(upload.returncode == 0 and debug_id in upload.stdout,
          "sentry-cli debug-files upload --wait succeeds and names the build id's debug id",
          f"status {upload.returncode}: {upload.stdout[-400:]} {upload.stderr[-400:]}")
    again = run([sentry_cli, "--url", base, "--auth-token", token, "debug-files", "upload", "--org", "any",
                 "--project", project, debug_file])
    check(again.returncode == 0 and "Nothing to upload" in again.stdout, "a second upload finds the file on the server",
          again.stdout[-300:])

    # 3. The same crash after the upload: one issue; both events symbolicated on view.
    shutil.rmtree(os.path.join(work, "reports"), ignore_errors=True)
    crash_and_report(stripped, os.path.join(work, "reports"), release)
    stored = poll(lambda: events_of_release(release), 2)
    if not check(len(stored) == 2, "the collector stored the second crash", stored):
        return
    check(len({issue["id"] for issue, _ in stored}) == 1, "both crashes, before and after the upload, are one issue",
          [(issue["id"], issue["culprit"]) for issue, _ in stored])
    for issue, event_id in stored:
        _, received = api(f"/api/0/projects/{project}/events/{event_id}")
        check(crashing_frame(received).get("function") is None, f"event {event_id[:8]} as received still has no function")
        status, symbolicated = api(f"/api/0/projects/{project}/events/{event_id}/symbolicated")
        frame = crashing_frame(symbolicated) if status == 200 else {}
        check(frame.get("function") == "csc_crash_segv" and frame.get("filename") == "csc_crash_kinds.c"
              and frame.get("lineno") == line,
              f"event {event_id[:8]}: the collector names csc_crash_segv at csc_crash_kinds.c:{line}",
              {key: frame.get(key) for key in ("function", "filename", "lineno", "instruction_addr")})

    def issue_culprit():
        status, issue = api(f"/api/0/issues/{first_issue['id']}")
        return [issue["culprit"]] if status == 200 and issue.get("culprit") == "csc_crash_segv" else []
    check(poll(issue_culprit, 1) == ["csc_crash_segv"], "the issue, created before the upload, is renamed after csc_crash_segv",
          api(f"/api/0/issues/{first_issue['id']}")[1])

    page = dashboard_page(base, admin_password, f"/issues/{first_issue['id']}", timeout=30)
    check('<td class="mono">csc_crash_segv</td>' in page and f"csc_crash_kinds.c:{line}" in page,
          f"the issue page shows csc_crash_segv at csc_crash_kinds.c:{line}", re.findall(r"<table class=\"frames\">.{0,600}", page)[:1])


main()
sys.exit(1 if problems else 0)
