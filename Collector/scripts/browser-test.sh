#!/usr/bin/env bash
# The dashboard in a real browser: installs Debian's chromium and chromium-driver when missing,
# Selenium and sentry-sdk from PyPI into Collector/.build/venv, starts a collector on 127.0.0.1
# with a known admin password, sends sample data with Sentry's Python SDK, then drives headless
# Chromium through every page and the account pages (scripts/browser_test.py).
#   scripts/browser-test.sh [--artifacts DIR] [serve options...]
# Artifacts (default Collector/.build/screenshots/, emptied first): a screenshot of each page,
# the collector's output with a debug line per request (collector.out, collector.err), ChromeDriver's
# command log (chromedriver.log) and, after a failure, 99-failure.png and 99-failure.html.
# The serve options go to `shield-collector serve` (e.g. --database postgres://... for an empty
# PostgreSQL database; default: SQLite in a temporary directory).
# Prints "N passed, M failed" and exits non-zero on any failure.
export DEBIAN_FRONTEND=noninteractive
set -uo pipefail
cd "$(dirname "$0")/.."
export SWIFT_BACKTRACE=enable=no
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    { apt-get install -y chromium chromium-driver >/dev/null || { apt-get update -qq && apt-get install -y chromium chromium-driver >/dev/null; }; } || { echo "FAIL: install chromium chromium-driver"; echo "0 passed, 1 failed"; exit 1; }
fi
venv=.build/venv
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
if ! "$venv/bin/python" -c 'import selenium, sentry_sdk' 2>/dev/null; then
    "$venv/bin/pip" install --quiet 'selenium>=4.10,<5' 'sentry-sdk>=2,<3' || { echo "FAIL: install selenium"; echo "0 passed, 1 failed"; exit 1; }
fi
bin="$(swift build --show-bin-path)/shield-collector"
[ -x "$bin" ] || swift build --product shield-collector || { echo "FAIL: build"; echo "0 passed, 1 failed"; exit 1; }
data="$(mktemp -d)"
shots=.build/screenshots
if [ "${1:-}" = "--artifacts" ]; then shots="${2:?--artifacts needs a directory}"; shift 2; fi
rm -rf "$shots"
mkdir -p "$shots"
password="browser-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
SHIELD_COLLECTOR_ADMIN_PASSWORD="$password" "$bin" serve --host 127.0.0.1 --port "$port" --data-dir "$data" --log-level debug "$@" \
    >"$data/stdout.log" 2>"$data/stderr.log" &
server=$!
cleanup() {
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
    cp "$data/stdout.log" "$shots/collector.out" 2>/dev/null; cp "$data/stderr.log" "$shots/collector.err" 2>/dev/null
    rm -rf "$data"
}
trap cleanup EXIT
dsn=""
for _ in $(seq 1 100); do
    dsn=$(sed -n 's/^first project DSN: //p' "$data/stdout.log")
    [ -n "$dsn" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$dsn" ]; then echo "FAIL: collector start"; cat "$data/stderr.log"; echo "0 passed, 1 failed"; exit 1; fi
if grep -q "password (shown once)" "$data/stdout.log"; then
    echo "FAIL: a configured admin password must not be printed"; echo "0 passed, 1 failed"; exit 1
fi
"$venv/bin/python" scripts/browser_ingest.py "$dsn" || { echo "FAIL: sample data"; tail -20 "$data/stderr.log"; echo "0 passed, 1 failed"; exit 1; }
"$venv/bin/python" scripts/browser_test.py "http://127.0.0.1:$port" "$password" "$shots" "$data"
status=$?
echo "artifacts in $shots: $(cd "$shots" 2>/dev/null && ls | tr '\n' ' ')"
exit $status
