#!/usr/bin/env bash
# The collector's tests: builds the package, runs its Swift tests on SQLite and again on a
# throw-away PostgreSQL (scripts/postgres.sh), then, for each database, sends events and a session
# from Sentry's own Python SDK (sentry-sdk from PyPI, in Collector/.build/venv) to a collector on
# 127.0.0.1 and checks through the API that they were stored and grouped; on both databases,
# CrashShield's own SDK end to end (scripts/sdk_e2e.py: the root package's `shield` crashes, prevents
# a crash, loops at launch, `shield send`s to a collector, fetches and applies its remote configuration,
# and one API call protects against its crash); server-side symbolication (scripts/symbolication_e2e.py:
# sentry-cli 3.8.2 uploads a stripped `shield`'s debug file, its crashes name function and line); kills a collector with
# SIGKILL during ingest and checks no acknowledged event is lost; slow and idle clients (slowloris)
# against a collector under `ulimit -n 1024` (scripts/slow_clients.py); two collectors on one
# PostgreSQL ingest the same stream concurrently; storage availability: a full 30 MB volume under
# SQLite (a tmpfs, so as root only; scripts/disk_full_ingest.py) and PostgreSQL restarted under
# load (scripts/pg_restart_ingest.py); finally drives the dashboard in headless Chromium
# (scripts/browser-test.sh, Selenium) on SQLite and on PostgreSQL, keeping each run's screenshots
# and logs in Collector/.build/screenshots/sqlite and .../postgres.
# Prints "N passed, M failed" and exits non-zero on any failure.
# `scripts/test.sh --availability` builds and runs only the two storage availability tests.
export DEBIAN_FRONTEND=noninteractive
set -uo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
passed=0
failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }
only_availability=0
[ "${1:-}" = "--availability" ] && only_availability=1
pg_dir=""
servers=()
data=""
mounted=""
# Mounting the full-disk test's tmpfs needs root: as root directly, otherwise through sudo without
# a password (as scripts/bootstrap.sh uses sudo for apt-get).
as_root=""; [ "$(id -u)" = 0 ] || as_root="sudo -n"
cleanup() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    [ -n "$pg_dir" ] && scripts/postgres.sh stop "$pg_dir"
    [ -n "$mounted" ] && $as_root umount "$mounted"
    [ -n "$data" ] && rm -rf "$data"
}
finish() {
    cleanup
    pg_dir=""
    data=""
    mounted=""
    servers=()
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}
trap cleanup EXIT

# The collector links the system's zlib, OpenSSL libcrypto and libpq (Debian: zlib1g-dev,
# libssl-dev, libpq-dev); the PostgreSQL runs need Debian's postgresql server.
if ! pkg-config --exists zlib libcrypto libpq || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    { apt-get install -y zlib1g-dev libssl-dev libpq-dev postgresql || { apt-get update -qq && apt-get install -y zlib1g-dev libssl-dev libpq-dev postgresql; }; } || { fail "install zlib1g-dev libssl-dev libpq-dev postgresql"; finish; }
fi

echo "== build =="
if ! swift build --build-tests; then fail "swift build"; finish; fi
bin="$(swift build --show-bin-path)/shield-collector"

run_swift_tests() {  # $1: label
    local log status tests
    log="$(mktemp)"
    swift test --skip-build 2>&1 | tee "$log" | grep -E "✘|Test run"
    status=${PIPESTATUS[0]}
    # Swift Testing's summary: "Test run with N tests in M suites passed/failed ...".
    tests=$(grep -Eo 'Test run with [0-9]+ test' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
    if [ "$status" -eq 0 ] && [ "${tests:-0}" -gt 0 ]; then pass "swift test on $1 ($tests tests)"; else fail "swift test on $1 (exit $status)"; fi
    rm -f "$log"
}

if [ "$only_availability" = 0 ]; then
    echo "== swift test (SQLite) =="
    run_swift_tests SQLite
fi

echo "== PostgreSQL =="
if pg="$(scripts/postgres.sh start)"; then
    pg_dir="${pg%% *}"
    pg_url="${pg#* }"
    pass "PostgreSQL started: $pg_url"
    if [ "$only_availability" = 0 ]; then
        echo "== swift test (PostgreSQL) =="
        COLLECTOR_TEST_POSTGRES_URL="$pg_url" run_swift_tests PostgreSQL
    fi
else
    fail "PostgreSQL start"
fi

echo "== sentry-sdk (Python) =="
venv=.build/venv
if [ "$only_availability" = 0 ] && { [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sentry_sdk' 2>/dev/null; }; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet 'sentry-sdk>=2,<3' || { fail "install sentry-sdk"; finish; }
fi
# The symbolication test (scripts/symbolication_e2e.py): sentry-cli 3.8.2 from PyPI uploads debug
# files; the collector symbolicates with Debian's llvm-symbolizer (package llvm); binutils splits
# and strips the binary.
if [ "$only_availability" = 0 ] && [ "$("$venv/bin/sentry-cli" --version 2>/dev/null)" != "sentry-cli 3.8.2" ]; then
    "$venv/bin/pip" install --quiet 'sentry-cli==3.8.2' || fail "install sentry-cli 3.8.2"
fi
if [ "$only_availability" = 0 ] && { ! command -v llvm-symbolizer >/dev/null || ! command -v objcopy >/dev/null; }; then
    { apt-get install -y llvm binutils || { apt-get update -qq && apt-get install -y llvm binutils; }; } || fail "install llvm binutils"
fi
data="$(mktemp -d)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
token="test-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"

start_collector() {  # $1: name, then serve options; sets started_url, started_dsn, started_pid
    local name="$1"; shift
    local port; port=$(free_port)
    SHIELD_COLLECTOR_API_TOKEN="$token" "$bin" serve --host 127.0.0.1 --port "$port" "$@" \
        >"$data/$name.out" 2>"$data/$name.err" &
    started_pid=$!
    servers+=("$started_pid")
    started_url="http://127.0.0.1:$port"
    started_dsn=""
    for _ in $(seq 1 150); do
        grep -q '^shield-collector listening' "$data/$name.out" 2>/dev/null && break
        kill -0 "$started_pid" 2>/dev/null || break
        sleep 0.1
    done
    started_dsn=$(sed -n 's/^first project DSN: //p' "$data/$name.out")
    grep -q '^shield-collector listening' "$data/$name.out" 2>/dev/null
}

stop_collector() {  # $1: pid, $2: label
    kill -TERM "$1"
    if wait "$1"; then pass "$2: graceful shutdown on SIGTERM"; else fail "$2: graceful shutdown on SIGTERM"; fi
    local kept=()
    for pid in "${servers[@]}"; do [ "$pid" != "$1" ] && kept+=("$pid"); done
    servers=("${kept[@]+"${kept[@]}"}")
}

# A full disk: SQLite on a 30 MB tmpfs (mounting one needs root) that a 10 MB ballast file shares;
# scripts/disk_full_ingest.py fills it through ingest (503 storage.full, /health, /metrics, error
# logs), deletes the ballast, and checks ingest resumes and every acknowledged event is stored.
disk_full_test() {
    echo "== full disk (SQLite on a 30 MB volume) =="
    local volume="$data/full-volume"
    mkdir -p "$volume"
    if ! $as_root mount -t tmpfs -o "size=30m,uid=$(id -u),gid=$(id -g)" collector-full "$volume"; then
        fail "full disk: cannot mount a 30 MB tmpfs (needs root or passwordless sudo)"
        return
    fi
    mounted="$volume"
    head -c 10M /dev/zero >"$volume/ballast"
    if start_collector disk-full --data-dir "$volume/data" --rate-limit 100000 --rate-limit-burst 100000; then
        if python3 scripts/disk_full_ingest.py "$started_dsn" "$started_url" "$token" "$volume/ballast" "$data/disk-full.err"; then
            pass "full disk: 503 storage.full with Retry-After, /health full, logged at error; ingest resumes, nothing acknowledged lost"
        else
            fail "full disk: 503 storage.full with Retry-After, /health full, logged at error; ingest resumes, nothing acknowledged lost"
            grep -v 'level=info' "$data/disk-full.err" | tail -5
        fi
        stop_collector "$started_pid" disk-full
    else
        fail "full disk: collector start"; tail -5 "$data/disk-full.err"
    fi
    $as_root umount "$volume" && mounted=""
}

# PostgreSQL restarted under load (pg_ctl -m fast stop; sleep 4; start): scripts/pg_restart_ingest.py.
pg_restart_test() {
    echo "== PostgreSQL restarted under load =="
    if ! psql "$pg_url" -qc "CREATE DATABASE collector_restart"; then fail "postgres: create the restart database"; return; fi
    if start_collector pg-restart --data-dir "$data/pg-restart" --database "${pg_url%/*}/collector_restart" \
        --rate-limit 100000 --rate-limit-burst 100000; then
        if python3 scripts/pg_restart_ingest.py "$started_dsn" "$started_url" "$token" "$pg_dir"; then
            pass "PostgreSQL restarted under load: 503 with Retry-After while away, reconnected, every acknowledged event stored"
        else
            fail "PostgreSQL restarted under load: 503 with Retry-After while away, reconnected, every acknowledged event stored"
            grep -v 'level=info' "$data/pg-restart.err" | tail -5
        fi
        stop_collector "$started_pid" pg-restart
    else
        fail "PostgreSQL restart: collector start"; tail -5 "$data/pg-restart.err"
    fi
    # Whatever happened above, the server is up again for the tests after this one.
    psql "$pg_url" -qc 'SELECT 1' >/dev/null 2>&1 || scripts/postgres.sh resume "$pg_dir"
}

if [ "$only_availability" = 1 ]; then
    disk_full_test
    [ -n "$pg_dir" ] && pg_restart_test
    finish
fi

sentry_sdk_against() {  # $1: label, then serve options
    local label="$1"; shift
    if ! start_collector "$label" "$@"; then fail "$label: collector start"; tail -5 "$data/$label.err"; return; fi
    if "$venv/bin/python" scripts/sentry_sdk_client.py "$started_dsn" "$started_url" "$token"; then
        pass "$label: sentry-sdk events, message and session stored and grouped"
    else
        fail "$label: sentry-sdk events, message and session stored and grouped"
        tail -20 "$data/$label.err"
    fi
    stop_collector "$started_pid" "$label"
}

sentry_sdk_against sqlite --data-dir "$data/sqlite"

# CrashShield's own SDK end to end (scripts/sdk_e2e.py), on SQLite here and on PostgreSQL below.
# The root package's `shield` binary (scripts/test builds it before calling this script; built
# here when missing): its reporting children crash, prevent a crash, loop at launch and
# `shield send` to the collector.
shield_bin="$(cd .. && swift build --show-bin-path)/shield"
if [ ! -x "$shield_bin" ]; then (cd .. && swift build --product shield) || fail "build the root package's shield"; fi
# The app that depends on the package by URL (case `app`): scripts/test's check-url-dependency.sh
# leaves it built; built here when missing.
if [ ! -x ../.build/url-dependency/App/.build/debug/App ]; then
    (cd .. && scripts/check-url-dependency.sh) || fail "build the app that depends on CrashShield by URL"
fi
sdk_e2e_against() {  # $1: label, then serve options
    local label="$1" admin_password; shift
    echo "== CrashShield's own SDK end to end ($label; scripts/sdk_e2e.py) =="
    [ -x "$shield_bin" ] || return
    admin_password="e2e-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
    # --sdk-config-max-age 0: every start of the SDK fetches the remote configuration (remote-config case).
    if SHIELD_COLLECTOR_ADMIN_PASSWORD="$admin_password" start_collector "sdk-e2e-$label" "$@" --sdk-config-max-age 0; then
        for case in crash incident launch-loop send remote-config culprit app protect; do
            mkdir -p "$data/sdk-e2e-$label-work"
            if python3 scripts/sdk_e2e.py "$case" "$shield_bin" "$started_dsn" "$started_url" "$token" "$data/sdk-e2e-$label-work" "$admin_password"; then
                pass "CrashShield SDK end to end ($label): $case"
            else
                fail "CrashShield SDK end to end ($label): $case"
            fi
        done
        stop_collector "$started_pid" "sdk-e2e-$label"
    else
        fail "CrashShield SDK end to end ($label): collector start"; tail -5 "$data/sdk-e2e-$label.err"
    fi
}
sdk_e2e_against sqlite --data-dir "$data/sdk-e2e-sqlite"

# Server-side symbolication (scripts/symbolication_e2e.py): `shield` split into a stripped binary
# and its debug file; a crash of the stripped binary, `sentry-cli debug-files upload` of the debug
# file, a second crash; the collector names the function and line of both. SQLite here, PostgreSQL below.
symbolication_against() {  # $1: label, then serve options
    local label="$1" admin_password; shift
    echo "== symbolication with sentry-cli's upload ($label; scripts/symbolication_e2e.py) =="
    [ -x "$shield_bin" ] || { fail "symbolication ($label): no shield binary"; return; }
    admin_password="symb-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
    if SHIELD_COLLECTOR_ADMIN_PASSWORD="$admin_password" start_collector "symbolication-$label" "$@"; then
        mkdir -p "$data/symbolication-$label-work"
        if python3 scripts/symbolication_e2e.py "$shield_bin" "$venv/bin/sentry-cli" "$started_dsn" "$started_url" "$token" \
            "$data/symbolication-$label-work" "$admin_password" ../Tests/Support/csc_crash_kinds.c; then
            pass "symbolication ($label): sentry-cli upload of a stripped binary's debug file; its crashes name function and line"
        else
            fail "symbolication ($label): sentry-cli upload of a stripped binary's debug file; its crashes name function and line"
            grep -v 'level=info' "$data/symbolication-$label.err" | tail -5
        fi
        stop_collector "$started_pid" "symbolication-$label"
    else
        fail "symbolication ($label): collector start"; tail -5 "$data/symbolication-$label.err"
    fi
}
symbolication_against sqlite --data-dir "$data/symbolication-sqlite"

echo "== kill -9 during ingest (SQLite) =="
if start_collector kill9 --data-dir "$data/kill9" --rate-limit 100000 --rate-limit-burst 100000; then
    if python3 scripts/kill9_ingest.py send "$started_dsn" "$started_url" "$started_pid" "$data/acked.json"; then
        wait "$started_pid" 2>/dev/null
        servers=()
        if start_collector kill9-restart --data-dir "$data/kill9"; then
            if python3 scripts/kill9_ingest.py verify "$started_url" 1 "$token" "$data/acked.json"; then
                pass "kill -9 during ingest: the database opens and every acknowledged event is stored"
            else
                fail "kill -9 during ingest: acknowledged events lost"
            fi
            stop_collector "$started_pid" kill9-restart
        else
            fail "kill -9 during ingest: the collector does not start again"; tail -5 "$data/kill9-restart.err"
        fi
    else
        fail "kill -9 during ingest: sending"
    fi
else
    fail "kill -9 during ingest: collector start"
fi
disk_full_test
echo "== slow and idle clients under ulimit -n 1024 (scripts/slow_clients.py) =="
if python3 scripts/slow_clients.py caps "$bin" "$data/slow-caps"; then
    pass "slow and idle clients: 1,100 slowloris + 500 idle connections under ulimit -n 1024; /health and ingest answer, caps refuse at once, header and idle timeouts close the rest"
else
    fail "slow and idle clients: 1,100 slowloris + 500 idle connections under ulimit -n 1024 (logs: $data/slow-caps)"
fi
if python3 scripts/slow_clients.py file-limit "$bin" "$data/slow-file-limit"; then
    pass "a cap above the open-file limit: lowered under the hard limit (descriptors never run out, /health answers), or the soft limit raised"
else
    fail "a cap above the open-file limit: lowered, or the soft limit raised (logs: $data/slow-file-limit)"
fi

if [ -n "$pg_dir" ]; then
    if psql "$pg_url" -qc "CREATE DATABASE collector_sdk"; then
        sentry_sdk_against postgres --data-dir "$data/pg" --database "${pg_url%/*}/collector_sdk"
    else
        fail "postgres: create the sentry-sdk database"
    fi

    if psql "$pg_url" -qc "CREATE DATABASE collector_sdk_e2e"; then
        sdk_e2e_against postgres --data-dir "$data/sdk-e2e-pg" --database "${pg_url%/*}/collector_sdk_e2e"
    else
        fail "postgres: create the SDK end-to-end database"
    fi

    if psql "$pg_url" -qc "CREATE DATABASE collector_symbolication"; then
        symbolication_against postgres --data-dir "$data/symbolication-pg" --database "${pg_url%/*}/collector_symbolication"
    else
        fail "postgres: create the symbolication database"
    fi

    echo "== two collectors on one PostgreSQL =="
    psql "$pg_url" -qc "CREATE DATABASE collector_shared"
    shared="${pg_url%/*}/collector_shared"
    if start_collector shared-a --data-dir "$data/a" --database "$shared" --rate-limit 100000 --rate-limit-burst 100000; then
        url_a="$started_url"; dsn_a="$started_dsn"; pid_a="$started_pid"
        if start_collector shared-b --data-dir "$data/b" --database "$shared" --rate-limit 100000 --rate-limit-burst 100000; then
            url_b="$started_url"; pid_b="$started_pid"
            if python3 scripts/two_collectors.py "$dsn_a" "$url_a" "$url_b" "$token"; then
                pass "two collectors on one PostgreSQL: every event stored once, counts exact"
            else
                fail "two collectors on one PostgreSQL: every event stored once, counts exact"
            fi
            stop_collector "$pid_b" shared-b
        else
            fail "second collector on the shared PostgreSQL"; tail -5 "$data/shared-b.err"
        fi
        stop_collector "$pid_a" shared-a
    else
        fail "first collector on the shared PostgreSQL"; tail -5 "$data/shared-a.err"
    fi

    pg_restart_test
fi

browser_test() {  # $1: label, $2: artifacts directory, then options for `serve`
    local label="$1" artifacts="$2" log status counts; shift 2
    echo "== dashboard in headless Chromium on $label (scripts/browser-test.sh) =="
    log="$(mktemp)"
    scripts/browser-test.sh --artifacts "$artifacts" "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    counts=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ "$status" -eq 0 ] && [ -n "$counts" ]; then
        pass "browser test on $label ($counts)"
    else
        fail "browser test on $label (${counts:-no summary}, exit $status; artifacts: Collector/$artifacts)"
    fi
    rm -f "$log"
}
rm -rf .build/screenshots
browser_test SQLite .build/screenshots/sqlite
if [ -n "$pg_dir" ]; then
    if psql "$pg_url" -qc "CREATE DATABASE collector_browser"; then
        browser_test PostgreSQL .build/screenshots/postgres --database "${pg_url%/*}/collector_browser"
    else
        fail "postgres: create the browser-test database"
    fi
fi
echo "browser-test artifacts (screenshots, collector and chromedriver logs): Collector/.build/screenshots/{sqlite,postgres}"
finish
