"""CrashShield's own SDK end to end against a running collector.

usage: sdk_e2e.py CASE SHIELD_BINARY DSN COLLECTOR_URL API_TOKEN WORK_DIR [ADMIN_PASSWORD]

CASE is one of:
  crash        a `shield reporting-probe` child reporting to DSN crashes (SIGSEGV in
               csc_crash_segv after its launch completed); its next start converts and uploads
               the report; the collector stores one event of the release, in an issue whose culprit
               names csc_crash_segv, with level fatal, the signal-handler mechanism and
               csc_crash_segv in-app on its stack, and release health counts a crashed session;
  incident     a reporting child runs an out-of-bounds -[NSArray objectAtIndex:] under the guards;
               the incident appears under the project's prevented crashes with guard `container`;
  launch-loop  a child crashes during launch twice (launch protection, threshold 2, one repair
               step `probe-step`), the third launch runs the step and completes; the collector has
               both launch crashes (`launch.phase` = launching, `launch.consecutive_crashes` 1 and 2)
               and an event naming `probe-step` as the step that ended the loop, and the dashboard's
               launch page (logged in with ADMIN_PASSWORD) lists it;
  send         `shield crash segv` writes a report without reporting; `shield send` delivers it and
               the collector stores the event `shield envelope` said it would send;
  app          an app built against the package by URL (scripts/check-url-dependency.sh) crashes in
               its C, Swift and Objective-C code, crashes under a report-only guard and misuses
               through Swift and Objective-C, reporting to DSN: every issue's culprit is the app's
               function, every event has the app's user, tag and breadcrumb, one misuse at two
               call sites is two issues, and the report-only guard stays report-only at the next
               start (E2E_APP: the app's path);
  culprit      a report-only container crash and uncaught C++ exceptions, sent with `shield send`:
               each issue's culprit is the app's function, CrashShield's frames are not in-app, the
               same call site with and without the guard's frames is one issue, another call site
               of the same exception another;
  remote-config  the remote switches through the SDK's own fetcher (`shield reporting-probe` with the
               project's DSN and Ed25519 public key; the collector must serve with
               `--sdk-config-max-age 0`, so every start fetches): a signed document published on
               the collector (container guard reportOnly) is fetched at one start and applied at
               the next (the out-of-bounds objectAtIndex: throws and is reported with policy
               reportOnly); the next fetch is answered 304 (the collector's
               collector_sdk_config_responses_total); a rollback on the collector is fetched at the
               start after and applied at the one after that (neutralised again); a document signed
               with another key (another project's), and the SDK configured with a wrong key, are
               refused and the last good document stays.
  protect      one click protects against a crash (in a project of its own; the collector must serve
               with --sdk-config-max-age 0): a reporting child whose guards are off (`--guards-off`)
               crashes twice on an out-of-bounds -[NSArray objectAtIndex:] (`--uncaught-scenario`);
               the issue's verdict (API) is the container guard; one API call publishes the
               neutralize switch, scoped to the release's app version; the next start fetches it,
               the start after applies it: the same misuse returns and is reported as an incident of
               guard container, twice over two starts, while the release's crash count stays at 2
               (events, release health, and the protections API: 2 crashes before, 0 after, 2
               incidents after); the dashboard's prevented-crashes page shows the same counts.
Every crash runs in a child process with a timeout. Prints one line per check and exits 1 when
any check failed.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from e2e_support import check, dashboard_page, problems

case, shield, dsn, base, token, work = sys.argv[1:7]
admin_password = sys.argv[7] if len(sys.argv) > 7 else None
project = urllib.parse.urlparse(dsn).path.strip("/").split("/")[-1]
CHILD_TIMEOUT = 60
POLL_SECONDS = 30


def api(path, method="GET", body=None):
    headers = {"Authorization": "Bearer " + token}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def child(arguments, environment=None):
    """Runs shield with `arguments`; returns (exit status or -signal, stdout)."""
    env = dict(os.environ, SWIFT_BACKTRACE="enable=no", **(environment or {}))
    try:
        result = subprocess.run([shield] + arguments, capture_output=True, encoding="utf-8", errors="replace",
                                timeout=CHILD_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as timeout:
        output = timeout.stdout or ""
        return "timeout", output.decode(errors="replace") if isinstance(output, bytes) else output
    if result.stderr.strip():
        print("  stderr of shield " + " ".join(arguments[:1]) + ": " + result.stderr.strip()[-400:])
    return result.returncode, result.stdout


def probe(directory, release, *options):
    return child(["reporting-probe", "--dir", directory, "--dsn", dsn, "--release", release, "--exit-flush-timeout", "10"]
                 + list(options))


def poll(what, fetch):
    """Calls `fetch` until it returns something truthy or POLL_SECONDS pass; returns the last value."""
    deadline = time.monotonic() + POLL_SECONDS
    while True:
        value = fetch()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def events_of_release(release):
    """Every stored event (full JSON) of `release` with its issue, over all issues of the project
    (events of several releases may share an issue: every case's crash is in csc_crash_segv)."""
    found = []
    for issue in api(f"/api/0/projects/{project}/issues"):
        for summary in api(f"/api/0/issues/{issue['id']}/events?limit=1000"):
            if summary.get("release") == release:
                found.append((issue, api(f"/api/0/projects/{project}/events/{summary['event_id']}")))
    return found


def frames(event):
    return [frame for exception in (event.get("exception") or {}).get("values", [])
            for frame in (exception.get("stacktrace") or {}).get("frames", [])]


def crash_case():
    directory = os.path.join(work, "crash")
    release = "e2e-crash@1.0"
    status, _ = probe(directory, release, "--crash-after-launch")
    check(status == -signal.SIGSEGV, "the crashing child dies of SIGSEGV", f"status {status}")
    status, output = probe(directory, release)
    check(status == 0 and '"last_run": "crashed"' in output, "the next start finds the crash and exits cleanly",
          f"status {status}, output {output!r}")

    stored = poll("crash event", lambda: events_of_release(release))
    if not check(len(stored) == 1, "the collector stored one event of the release",
                 [(issue["title"], event.get("level")) for issue, event in stored]):
        return
    issue, event = stored[0]
    check("csc_crash_segv" in issue["culprit"], "its issue's culprit names csc_crash_segv", issue["culprit"])
    check(issue["level"] == "fatal", "its issue is fatal", issue["level"])
    check(event.get("release") == release, "the event has the release", event.get("release"))
    check(event.get("level") == "fatal", "the event has level fatal", event.get("level"))
    exception = ((event.get("exception") or {}).get("values") or [{}])[-1]
    mechanism = exception.get("mechanism") or {}
    check(mechanism.get("type") == "signalhandler" and mechanism.get("handled") is False
          and (mechanism.get("meta") or {}).get("signal", {}).get("name") == "SIGSEGV",
          "the event's mechanism is an unhandled signalhandler SIGSEGV", mechanism)
    crashing = [frame for frame in frames(event) if frame.get("function") == "csc_crash_segv"]
    check(crashing and crashing[0].get("in_app") is True, "the stack names csc_crash_segv as an in-app frame",
          [frame.get("function") for frame in frames(event)][-6:])
    check((event.get("tags") or {}).get("launch.phase") == "running", "the crash after launch is tagged launch.phase=running",
          event.get("tags"))

    def health():
        rows = [row for row in api(f"/api/0/projects/{project}/release-health") if row["release"] == release]
        return rows if rows and rows[0]["crashed_sessions"] >= 1 and rows[0]["sessions"] >= 2 else None
    rows = poll("release health", health) or api(f"/api/0/projects/{project}/release-health")
    check(bool(rows) and rows[0]["release"] == release and rows[0]["crashed_sessions"] == 1 and rows[0]["sessions"] == 2,
          "release health counts two sessions, one crashed", rows)


def incident_case():
    directory = os.path.join(work, "incident")
    release = "e2e-incident@1.0"
    status, output = probe(directory, release, "--scenario", "array.objectAtIndex.beyond")
    check(status == 0 and "SCENARIO array.objectAtIndex.beyond guard=container outcome=returned" in output,
          "the guarded out-of-bounds objectAtIndex: returns (no crash)", f"status {status}, output {output!r}")

    def incidents():
        return [row for row in api(f"/api/0/projects/{project}/incidents")
                if row.get("release") == release and row.get("guard_name") == "container"]
    rows = poll("incidents", incidents)
    check(len(rows) == 1 and rows[0]["count"] == 1, "one prevented crash by guard container for the release",
          api(f"/api/0/projects/{project}/incidents"))
    stored = events_of_release(release)
    warnings = [(issue, event) for issue, event in stored if event.get("level") == "warning"]
    check(len(warnings) == 1 and warnings[0][0]["level"] == "warning"
          and ((warnings[0][1].get("exception") or {}).get("values") or [{}])[-1].get("mechanism", {}).get("handled") is True,
          "the incident is a warning event with a handled mechanism, in a warning issue",
          [(issue["title"], event.get("level")) for issue, event in stored])


def launch_loop_case():
    directory = os.path.join(work, "launch-loop")
    release = "e2e-launch-loop@1.0"
    # A generous bound for sending a launch crash before the repair step: the claim is the order.
    options = ["--threshold", "2", "--probe-step", "--launch-flush-timeout", "10"]
    for attempt in (1, 2):
        status, _ = probe(directory, release, "--crash-during-launch", *options)
        check(status == -signal.SIGSEGV, f"launch {attempt} crashes during launch", f"status {status}")
    status, output = probe(directory, release, "--complete-launch", *options)
    check(status == 0 and "REPAIR pending=0" in output and "LAUNCH-COMPLETED repairs=probe-step" in output,
          "launch 3 runs probe-step (after the launch crashes were delivered) and completes", f"status {status}, output {output!r}")

    def launch_events():
        found = events_of_release(release)
        crashes = [event for _, event in found if (event.get("tags") or {}).get("launch.phase") == "launching"]
        ended = [event for _, event in found if (event.get("tags") or {}).get("launch.repair_step")]
        return (crashes, ended) if len(crashes) >= 2 and ended else None
    result = poll("launch events", launch_events)
    crashes, ended = result or ([], [])
    if not result:
        found = events_of_release(release)
        print("  events of the release:", [(event.get("level"), event.get("tags")) for _, event in found])
    counts = sorted((event.get("tags") or {}).get("launch.consecutive_crashes") for event in crashes)
    check(counts == ["1", "2"], "two launch crashes tagged launch.phase=launching, launch.consecutive_crashes 1 and 2",
          counts)
    check(all(any(frame.get("function") == "csc_crash_segv" for frame in frames(event)) for event in crashes) and crashes,
          "each launch crash names csc_crash_segv")
    check(len(ended) == 1 and ended[0]["tags"]["launch.repair_step"] == "probe-step"
          and ended[0]["tags"].get("launch.consecutive_crashes") == "2" and ended[0].get("level") == "info",
          "one info event names probe-step as the repair step that ended a loop of 2",
          [(event.get("level"), event.get("tags")) for event in ended])
    if admin_password is None:
        check(False, "the dashboard's launch page", "no admin password given")
        return
    page = dashboard_page(base, admin_password, f"/projects/{project}/launch")
    ended_table = page.split("Loops ended", 1)[-1] if "Loops ended" in page else ""
    check(re.search(r"<td class=\"mono\">probe-step</td><td class=\"num\">1</td><td>" + re.escape(release), ended_table)
          is not None, "the dashboard's launch page lists probe-step as ending one loop of the release",
          ended_table[:600] or page[:300])
    crashes_table = page.split("Launch crashes by release", 1)[-1].split("Loops ended", 1)[0]
    check(re.search(re.escape(release) + r"</td><td class=\"num\">2</td><td class=\"num\">2</td>", crashes_table) is not None,
          "the dashboard's launch page counts 2 launch crashes, longest loop 2, for the release", crashes_table[:600])


def send_case():
    directory = os.path.join(work, "send")
    status, _ = child(["crash", "segv", "--dir", directory, "--app-name", "e2e-send"])
    check(status == -signal.SIGSEGV, "`shield crash segv` dies of SIGSEGV", f"status {status}")
    status, preview = child(["envelope", "--dir", directory, "--dsn", dsn])
    lines = preview.splitlines()
    # Each converted report is announced by a comment line, followed by its envelope's header.
    headers = [json.loads(lines[index + 1]) for index, line in enumerate(lines[:-1]) if line.startswith("# crash report ")]
    if not check(status == 0 and len(headers) == 1, "`shield envelope` shows the one crash envelope", f"status {status}"):
        return
    event_id = headers[0]["event_id"].replace("-", "")
    status, output = child(["send", "--dsn", dsn, "--dir", directory])
    check(status == 0 and "delivered 1, dropped 0, pending 0" in output, "`shield send` delivers it",
          f"status {status}, output {output!r}")

    def stored():
        try:
            return api(f"/api/0/projects/{project}/events/{event_id}")
        except urllib.error.HTTPError:
            return None
    event = poll("sent event", stored)
    if not check(event is not None, "the collector stored the sent event", event_id):
        return
    check(event.get("level") == "fatal" and (event.get("release") or "").startswith("e2e-send@"),
          "the sent event is fatal with the report's release", (event.get("level"), event.get("release")))
    check(any(frame.get("function") == "csc_crash_segv" for frame in frames(event)), "the sent event names csc_crash_segv")


def culprit_case():
    """The app's frame is the culprit, not CrashShield's: a report-only container crash (the
    guard's hook frames sit between the exception and the app's call) and an uncaught C++
    exception (the terminate handler's frame sits above std::terminate) are sent with `shield
    send`; each issue's culprit is the app function that made the call, CrashShield's frames are
    on the stack with in_app false, and the same call site crashing without the guards is the same
    issue as with them, while another call site of the same C++ exception is an issue of its own."""
    def crash_and_send(label, arguments, expected_signal):
        directory = os.path.join(work, "culprit-" + label)
        status, _ = child(["crash"] + arguments + ["--dir", directory, "--app-name", "e2e-culprit"])
        check(status == -expected_signal, f"`shield crash {' '.join(arguments)}` dies of signal {expected_signal}", f"status {status}")
        status, preview = child(["envelope", "--dir", directory, "--dsn", dsn])
        lines = preview.splitlines()
        headers = [json.loads(lines[index + 1]) for index, line in enumerate(lines[:-1]) if line.startswith("# crash report ")]
        if not check(status == 0 and len(headers) == 1, f"{label}: one crash envelope", f"status {status}"):
            return None
        event_id = headers[0]["event_id"].replace("-", "")
        status, output = child(["send", "--dsn", dsn, "--dir", directory])
        check(status == 0 and "dropped 0, pending 0" in output, f"{label}: `shield send` delivers it", f"status {status}, {output!r}")

        def stored():
            try:
                return api(f"/api/0/projects/{project}/events/{event_id}")
            except urllib.error.HTTPError:
                return None
        event = poll(f"{label} event", stored)
        if not check(event is not None, f"{label}: the collector stored the event", event_id):
            return None
        for issue in api(f"/api/0/projects/{project}/issues"):
            for summary in api(f"/api/0/issues/{issue['id']}/events?limit=1000"):
                if summary.get("event_id", "").replace("-", "") == event_id:
                    return issue, event
        check(False, f"{label}: the event belongs to an issue", event_id)
        return None

    report_only = crash_and_send("report-only", ["array-beyond", "--guards", "--set-policy", "container=reportOnly"], signal.SIGABRT)
    unguarded = crash_and_send("unguarded", ["array-beyond"], signal.SIGABRT)
    cxx = crash_and_send("cxx", ["cxx-exception"], signal.SIGABRT)
    cxx_thread = crash_and_send("cxx-thread", ["thread-cxx-exception"], signal.SIGABRT)
    if report_only:
        issue, event = report_only
        check("cs_capture_array_beyond_for_testing" in issue["culprit"],
              "report-only crash: the issue's culprit is the app's call site", issue["culprit"])
        sdk = [frame for frame in frames(event) if (frame.get("function") or "").startswith("cs_array_objectAtIndex")]
        check(sdk and all(frame.get("in_app") is False for frame in sdk),
              "report-only crash: the guard's hook frames are on the stack, not in-app", [f.get("in_app") for f in sdk])
    if report_only and unguarded:
        check(report_only[0]["id"] == unguarded[0]["id"],
              "the same call site with and without the guard's frames is one issue",
              (report_only[0]["culprit"], unguarded[0]["culprit"]))
    if cxx:
        issue, event = cxx
        check("checkout_total" in issue["culprit"], "C++ exception: the issue's culprit is the throwing app function", issue["culprit"])
        check("std::out_of_range" in issue["title"], "C++ exception: the issue's title names the exception type", issue["title"])
        handler = [frame for frame in frames(event) if "terminate_handler" in (frame.get("function") or "")]
        check(handler and all(frame.get("in_app") is False for frame in handler),
              "C++ exception: the terminate handler's frame is on the stack, not in-app", [f.get("in_app") for f in handler])
    if cxx and cxx_thread:
        check(cxx[0]["id"] != cxx_thread[0]["id"], "another call site of the same exception is an issue of its own",
              (cxx[0]["culprit"], cxx_thread[0]["culprit"]))


def app_case():
    """An app built against the package by URL (scripts/check-url-dependency.sh leaves it in
    ../.build/url-dependency/App; its E2E.swift) reports to the collector: its own C, Swift and
    Objective-C code crash, a report-only container crash, misuses through [shielded:] and through
    Objective-C. Every issue's culprit is the app function that made the call, every event carries
    the app's user, tag and breadcrumb, and the report-only crash leaves the guard report-only at
    the next start (the fail-safe does not take it for the guard's fault)."""
    app = os.environ.get("E2E_APP") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build",
                                                    "url-dependency", "App", ".build", "debug", "App")
    if not check(os.access(app, os.X_OK), "the app built by scripts/check-url-dependency.sh exists", app):
        return
    release = "e2e-app@1.0.0"

    def run(mode, directory):
        env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
        try:
            result = subprocess.run([app, "e2e", mode, directory, dsn], capture_output=True, encoding="utf-8",
                                    errors="replace", timeout=CHILD_TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            return "timeout", ""
        return result.returncode, result.stdout

    crashes = {"crash-c": (signal.SIGSEGV, "app_c_crash"), "crash-swift": (signal.SIGILL, "checkoutTotal"),
               "crash-objc": (signal.SIGABRT, "app_objc_crash"), "report-only": (signal.SIGABRT, "app_objc_index_beyond")}
    for mode, (expected, _) in crashes.items():
        directory = os.path.join(work, "app-" + mode)
        status, output = run(mode, directory)
        check(status == -expected, f"app {mode}: dies of signal {expected}", f"status {status}, {output[-300:]!r}")
        status, output = run("deliver", directory)
        check(status == 0 and "flushed: true" in output, f"app {mode}: the next start delivers the report", f"status {status}, {output!r}")
        if mode == "report-only":
            check("container policy: reportOnly" in output,
                  "after the report-only crash the container guard is still report-only (the app's, not the guard's crash)", output)
    for mode in ("misuse-swift", "misuse-objc", "misuse-sites"):
        status, output = run(mode, os.path.join(work, "app-" + mode))
        check(status == 0 and "flushed: true" in output, f"app {mode}: neutralised, incident delivered", f"status {status}, {output!r}")
    check("objects returned: 0" in output, "the same misuse at two call sites is neutralised each time", output)

    expected_culprits = [("fatal", "app_c_crash"), ("fatal", "checkoutTotal"), ("fatal", "app_objc_crash"),
                         ("fatal", "app_objc_index_beyond"), ("warning", "applyCoupon"), ("warning", "app_objc_misuses"),
                         ("warning", "app_objc_site_a"), ("warning", "app_objc_site_b")]
    stored = poll("app events", lambda: (lambda found: found if len(found) >= 9 else None)(events_of_release(release))) \
        or events_of_release(release)
    # Grouping: one misuse at two call sites is two issues; the first site, reached twice, one.
    site_issues = {site: {issue["id"] for issue, _ in stored if site in (issue.get("culprit") or "")}
                   for site in ("app_objc_site_a", "app_objc_site_b")}
    check(len(site_issues["app_objc_site_a"]) == 1 and len(site_issues["app_objc_site_b"]) == 1
          and site_issues["app_objc_site_a"] != site_issues["app_objc_site_b"],
          "the same misuse at two app call sites is two issues, each call site one", site_issues)
    for level, function in expected_culprits:
        matching = [(issue, event) for issue, event in stored if event.get("level") == level and function in (issue.get("culprit") or "")]
        check(matching, f"a {level} issue whose culprit is the app's {function}",
              sorted({(event.get("level"), issue.get("culprit")) for issue, event in stored}))
    check(not [issue for issue, _ in stored if re.search(r"\bcs_|csc_|terminate_handler|\+0x", issue.get("culprit") or "")],
          "no issue's culprit is CrashShield's code or an unnamed address", sorted({issue.get("culprit") for issue, _ in stored}))
    for issue, event in stored:
        tags = event.get("tags") or {}
        tag_pairs = dict(tags) if isinstance(tags, list) else tags
        crumbs = [crumb.get("message") for crumb in ((event.get("breadcrumbs") or {}).get("values") or [])]
        check((event.get("user") or {}).get("id") == "user-42" and tag_pairs.get("checkout_flow") == "v2" and "opened cart" in crumbs,
              f"the {event.get('level')} event of {issue.get('culprit')} carries the app's user, tag and breadcrumb",
              ((event.get("user") or {}).get("id"), tag_pairs.get("checkout_flow"), crumbs[-3:]))


def sdk_config_answers():
    """The collector's count of sdk-config answers by HTTP status, from /metrics."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return {int(status): int(count) for status, count in
            re.findall(r'^collector_sdk_config_responses_total\{status="(\d+)"\} (\d+)$', text, re.MULTILINE)}


def remote_config_case():
    directory = os.path.join(work, "remote-config")
    scenario = "array.objectAtIndex.beyond"
    mine = next(row for row in api("/api/0/projects") if str(row["id"]) == project)
    key = mine["config_signing_public_key"]

    def launch(number, expected_active, key=key, dsn_text=dsn):
        """One start of the app: the SDK's start with reporting to `dsn_text` and the remote
        configuration checked with `key`; it waits for the start's background fetch, then runs the
        misuse under the guards. Returns (active version, fetch outcome, scenario outcome, release)."""
        release = f"e2e-remote-{number}@1.0"
        status, output = child(["reporting-probe", "--dir", directory, "--dsn", dsn_text, "--release", release,
                                 "--exit-flush-timeout", "10", "--remote-config-public-key", key,
                                 "--wait-for-remote-config", "--scenario", scenario])
        start = next((json.loads(line) for line in output.splitlines() if line.startswith('{"start_ns"')), {})
        fetch = next((line.split("fetch=", 1)[1] for line in output.splitlines() if line.startswith("REMOTE-CONFIG ")), None)
        outcome = next((line.rsplit("outcome=", 1)[1] for line in output.splitlines() if line.startswith("SCENARIO ")), None)
        active = start.get("remote_config_version")
        check(status == 0 and active == expected_active,
              f"start {number} runs with remote configuration version {expected_active or 'none'}", f"status {status}, output {output!r}")
        return active, fetch, outcome, release

    def incident_policies(release, project_id=project):
        """The `crashshield.policy` tags of the release's incident events (prevented crashes)."""
        def fetch():
            found = []
            for issue in api(f"/api/0/projects/{project_id}/issues"):
                for summary in api(f"/api/0/issues/{issue['id']}/events?limit=1000"):
                    if summary.get("release") == release:
                        event = api(f"/api/0/projects/{project_id}/events/{summary['event_id']}")
                        if event.get("level") == "warning":
                            found.append((event.get("tags") or {}).get("crashshield.policy"))
            return found
        return poll("incident events", fetch)

    def publish(project_id, document):
        return api(f"/api/0/projects/{project_id}/sdk-config", method="PUT", body={"document": document})["version"]

    neutralize = publish(project, {"rules": [{"guards": {"container": "neutralize"}}]})
    report_only = publish(project, {"rules": [{"when": {"app_version": ">=1.0"}, "guards": {"container": "reportOnly"}}]})
    before = sdk_config_answers()

    # Start 1: nothing stored yet: the guard's default (neutralize); the fetch stores the newest version.
    _, fetch, outcome, release = launch(1, None)
    check(fetch == f"stored(version: {report_only})", f"start 1 fetches and stores version {report_only}", fetch)
    check(outcome == "returned", "start 1 neutralises the misuse (the default policy)", outcome)
    check(incident_policies(release) == ["neutralize"], "start 1's incident is reported with policy neutralize",
          incident_policies(release))
    after_first = sdk_config_answers()
    check(after_first.get(200, 0) == before.get(200, 0) + 1, "the collector answered that fetch with 200", (before, after_first))

    # Start 2: the stored document applies: reportOnly lets the exception through and reports it.
    _, fetch, outcome, release = launch(2, report_only)
    check(outcome == "threw", "start 2 applies reportOnly: the misuse throws as unguarded", outcome)
    check(incident_policies(release) == ["reportOnly"], "start 2's incident is reported with policy reportOnly",
          incident_policies(release))
    check(fetch == "notModified", "start 2's fetch is answered not modified", fetch)
    after_second = sdk_config_answers()
    check(after_second.get(304, 0) == after_first.get(304, 0) + 1 and after_second.get(200, 0) == after_first.get(200, 0),
          "the collector answered the second fetch with 304 (the stored ETag), not 200", (after_first, after_second))

    # A rollback on the collector re-issues the neutralize content under a new version.
    rolled = api(f"/api/0/projects/{project}/sdk-config/rollback", method="POST", body={"version": neutralize})
    rollback = rolled["version"]
    check(rollback > report_only and rolled.get("restored_from") == neutralize,
          f"the rollback to version {neutralize} is published as version {rollback}", rolled)
    _, fetch, outcome, _ = launch(3, report_only)
    check(fetch == f"stored(version: {rollback})" and outcome == "threw",
          "start 3 still runs reportOnly and fetches the rollback", (fetch, outcome))
    _, fetch, outcome, release = launch(4, rollback)
    check(outcome == "returned" and incident_policies(release) == ["neutralize"],
          "start 4 applies the rollback: the misuse is neutralised again and reported so", (outcome, incident_policies(release)))
    check(fetch == "notModified", "start 4's fetch is answered not modified", fetch)

    # A document signed with another key: another project's, fetched with this app's key.
    other = api("/api/0/projects", method="POST", body={"name": "e2e-remote-other"})
    publish(other["id"], {"version": rollback + 10, "rules": [{"guards": {"container": "off"}}]})
    parts = urllib.parse.urlparse(base)
    other_dsn = f"{parts.scheme}://{other['public_key']}@{parts.netloc}/{other['id']}"
    _, fetch, outcome, _ = launch(5, rollback, dsn_text=other_dsn)
    check((fetch or "").startswith("rejected(") and "remote_config.bad_signature" in fetch,
          "a document signed with another key is rejected (bad signature)", fetch)
    check(outcome == "returned", "and the last good document (the rollback) stays in force", outcome)

    # The app configured with a wrong key: it refuses the stored document and a newly fetched one.
    newer = publish(project, {"rules": [{"guards": {"container": "off"}}]})
    _, fetch, outcome, _ = launch(6, None, key=other["config_signing_public_key"])
    check((fetch or "").startswith("rejected(") and "remote_config.bad_signature" in fetch,
          f"with a wrong key, version {newer} is rejected (bad signature)", fetch)
    check(outcome == "returned", "with a wrong key, no document applies (the guard's default)", outcome)
    _, fetch, outcome, _ = launch(7, rollback)
    check(fetch == f"stored(version: {newer})", "with the right key again, the last good document is in force and the newer one is fetched", fetch)


def protect_case():
    parts = urllib.parse.urlparse(base)
    created = api("/api/0/projects", method="POST", body={"name": "e2e-protect"})
    pid, key = created["id"], created["config_signing_public_key"]
    pdsn = f"{parts.scheme}://{created['public_key']}@{parts.netloc}/{pid}"
    directory = os.path.join(work, "protect")
    scenario = "array.objectAtIndex.beyond"
    release = "e2e-protect@1.0"

    def start(number, misuse):
        """One start of an app with every guard off unless the remote configuration switches one
        on; it waits for the start's fetch, then (`misuse`) runs the misuse with nothing around it."""
        arguments = ["reporting-probe", "--dir", directory, "--dsn", pdsn, "--release", release, "--exit-flush-timeout", "10",
                     "--remote-config-public-key", key, "--wait-for-remote-config", "--guards-off"]
        if misuse:
            arguments += ["--scenario", scenario, "--uncaught-scenario"]
        status, output = child(arguments)
        line = next((json.loads(text) for text in output.splitlines() if text.startswith('{"start_ns"')), {})
        fetch = next((text.split("fetch=", 1)[1] for text in output.splitlines() if text.startswith("REMOTE-CONFIG ")), None)
        returned = any(text.startswith(f"SCENARIO {scenario} ") and text.endswith("outcome=returned") for text in output.splitlines())
        return status, line.get("remote_config_version"), fetch, returned

    def crash_events():
        found = []
        for issue in api(f"/api/0/projects/{pid}/issues"):
            for summary in api(f"/api/0/issues/{issue['id']}/events?limit=1000"):
                if summary.get("release") == release and summary.get("level") == "fatal":
                    found.append((issue, summary))
        return found

    for number in (1, 2):
        status, active, _, returned = start(number, misuse=True)
        check(status not in (0, "timeout") and not returned and active is None,
              f"start {number}: guards off, the misuse crashes the app", f"status {status}, active {active}")
    status, _, _, _ = start(3, misuse=False)
    check(status == 0, "start 3 runs without the misuse and exits cleanly", f"status {status}")
    crashes = poll("two crash events", lambda: (lambda found: found if len(found) >= 2 else None)(crash_events())) or crash_events()
    if not check(len(crashes) == 2 and len({issue["id"] for issue, _ in crashes}) == 1,
                 "the collector has the two crashes of the release, in one issue", [(i["title"], s["event_id"]) for i, s in crashes]):
        return
    issue = crashes[0][0]
    check("NSRangeException" in issue["title"], "the issue is the NSRangeException", issue["title"])
    protection = api(f"/api/0/issues/{issue['id']}/protection")
    verdict = protection.get("verdict") or {}
    check(verdict.get("guard") == "container" and verdict.get("rule") == "container.misuse",
          "the issue says: container guard (rule container.misuse)", verdict)
    check([row.get("app_version") for row in protection.get("releases", [])] == ["1.0"],
          "the issue's release scopes app version 1.0", protection.get("releases"))

    published = api(f"/api/0/issues/{issue['id']}/protect", method="POST", body={"policy": "neutralize"})
    version = published.get("version")
    rules = published.get("config", {}).get("document", {}).get("rules", [])
    check(published.get("guard") == "container" and published.get("releases") == [release]
          and rules and rules[0].get("when") == {"app_version": "=1.0"} and rules[0].get("guards") == {"container": "neutralize"},
          "one API call publishes container=neutralize for app version 1.0", published)
    check((published.get("config", {}).get("published_by") or {}).get("api_token") == "initial",
          "the version names who published it", published.get("config", {}).get("published_by"))

    status, active, fetch, _ = start(4, misuse=False)
    check(status == 0 and fetch == f"stored(version: {version})", f"start 4 fetches version {version}", f"status {status}, fetch {fetch}")
    for number in (5, 6):
        status, active, _, returned = start(number, misuse=True)
        check(status == 0 and active == version and returned,
              f"start {number} applies version {version}: the same misuse returns", f"status {status}, active {active}, returned {returned}")

    def incidents():
        rows = [row for row in api(f"/api/0/projects/{pid}/incidents") if row.get("release") == release and row.get("guard_name") == "container"]
        return rows if rows and rows[0]["count"] >= 2 else None
    rows = poll("incidents", incidents) or []
    check(len(rows) == 1 and rows[0]["count"] == 2, "two prevented crashes by guard container for the release",
          api(f"/api/0/projects/{pid}/incidents"))
    check(len(crash_events()) == 2, "the release's crash count stays at 2 after the switch", len(crash_events()))
    health = [row for row in api(f"/api/0/projects/{pid}/release-health") if row["release"] == release]
    check(bool(health) and health[0]["crashed_sessions"] == 2 and health[0]["sessions"] == 6,
          "release health: 6 sessions, still 2 crashed", health)
    summaries = [row for row in api(f"/api/0/projects/{pid}/protections") if row["protection"]["release"] == release]
    check(len(summaries) == 1 and summaries[0]["protection"]["config_version"] == version and summaries[0]["crashes_before"] == 2
          and summaries[0]["crashes_after"] == 0 and summaries[0]["incidents_after"] == 2,
          "the protection: 2 crashes before, 0 after, 2 incidents after", summaries)
    if admin_password is None:
        check(False, "the dashboard's prevented-crashes page", "no admin password given")
        return
    page = dashboard_page(base, admin_password, f"/projects/{pid}/prevented")
    row = re.search(r"<tr data-protection=\"\d+\"><td>container</td><td>" + re.escape(release) + r"</td>.*?</tr>", page)
    check(row is not None and "data-crashes-before>2<" in row.group(0) and "data-crashes-after>0<" in row.group(0)
          and "data-incidents-after>2<" in row.group(0),
          "the prevented-crashes page shows 2 crashes before, 0 after and 2 incidents after the switch", row.group(0) if row else page[-800:])


cases = {"crash": crash_case, "incident": incident_case, "launch-loop": launch_loop_case, "send": send_case,
         "remote-config": remote_config_case, "culprit": culprit_case, "app": app_case, "protect": protect_case}
if case not in cases:
    sys.exit(f"unknown case {case}: one of {', '.join(cases)}")
try:
    cases[case]()
except Exception as error:  # an API error or a malformed answer is a failed check, with its reason
    check(False, f"{case} ran to the end", repr(error))
print(f"sdk-e2e {case}: {len(problems)} failed check(s)")
sys.exit(1 if problems else 0)
