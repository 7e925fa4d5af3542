#!/usr/bin/env bash
# The collector's tests: builds the package, runs its Swift tests, then sends events and a session
# from Sentry's own Python SDK (sentry-sdk from PyPI, in Collector/.build/venv) to a collector
# running on 127.0.0.1 and checks through the API that they were stored and grouped; finally drives
# the dashboard in headless Chromium (scripts/browser-test.sh, Selenium; screenshots kept).
# Prints "N passed, M failed" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
passed=0
failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

# The collector links the system's zlib and OpenSSL libcrypto (Debian: zlib1g-dev, libssl-dev).
if ! pkg-config --exists zlib libcrypto; then
    apt-get install -y zlib1g-dev libssl-dev || { fail "install zlib1g-dev libssl-dev"; finish; }
fi

echo "== build =="
if ! swift build --build-tests; then fail "swift build"; finish; fi

echo "== swift test =="
log="$(mktemp)"
swift test --skip-build 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# Swift Testing's summary: "Test run with N tests in M suites passed ..." or "... failed ... with K issues".
tests=$(grep -Eo 'Test run with [0-9]+ test' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
if [ "$status" -eq 0 ] && [ "${tests:-0}" -gt 0 ]; then
    pass "swift test ($tests tests)"
else
    fail "swift test (exit $status)"
fi
rm -f "$log"

echo "== sentry-sdk (Python) against a running collector =="
venv=.build/venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sentry_sdk' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet 'sentry-sdk>=2,<3' || { fail "install sentry-sdk"; finish; }
fi
bin="$(swift build --show-bin-path)/shield-collector"
data="$(mktemp -d)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
token="test-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
SHIELD_COLLECTOR_API_TOKEN="$token" "$bin" serve --host 127.0.0.1 --port "$port" --data-dir "$data" \
    >"$data/stdout.log" 2>"$data/stderr.log" &
server=$!
# server=0 once it has been stopped: "kill 0" would signal the whole process group.
cleanup() { if [ "$server" != 0 ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; fi; rm -rf "$data"; }
trap cleanup EXIT
dsn=""
for _ in $(seq 1 100); do
    dsn=$(sed -n 's/^first project DSN: //p' "$data/stdout.log")
    [ -n "$dsn" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$dsn" ]; then
    fail "collector start"; cat "$data/stderr.log"; finish
fi
pass "collector started: $dsn"
if "$venv/bin/python" scripts/sentry_sdk_client.py "$dsn" "http://127.0.0.1:$port" "$token"; then
    pass "sentry-sdk events, message and session stored and grouped"
else
    fail "sentry-sdk events, message and session stored and grouped"
    tail -20 "$data/stderr.log"
fi
kill -TERM "$server"
if wait "$server"; then pass "graceful shutdown on SIGTERM"; else fail "graceful shutdown on SIGTERM (exit $?)"; fi
server=0

echo "== dashboard in headless Chromium (scripts/browser-test.sh) =="
browser_log="$(mktemp)"
scripts/browser-test.sh 2>&1 | tee "$browser_log"
browser_status=${PIPESTATUS[0]}
browser_counts=$(grep -Eo '^[0-9]+ passed, [0-9]+ failed' "$browser_log" | tail -1)
if [ "$browser_status" -eq 0 ] && [ -n "$browser_counts" ]; then
    pass "browser test ($browser_counts; screenshots in Collector/.build/screenshots)"
else
    fail "browser test (${browser_counts:-no summary}, exit $browser_status)"
fi
rm -f "$browser_log"
finish
