#!/usr/bin/env bash
# Sentry interoperability: every envelope CrashShield's reporting produces must be readable by
# Sentry's Python SDK (sentry_sdk.envelope.Envelope.deserialize) and every event must pass Relay's
# store normalization (sentry_relay, the code Sentry's ingestion runs) without errors and without
# a field dropped. Checks the golden envelopes (Tests/Golden/Reporting/envelopes, which
# GoldenEnvelopeTests keeps equal to the SDK's output) and envelopes of live crashes exported by
# LiveCrashEnvelopeTests (one with the app's scope), of real guard incidents (IncidentReportingTests,
# IncidentScopeTests: with the app's scope), of handled events (ReportingTests), of a report-only incident sent beside its crash (FailSafeTests) and of a launch
# loop's end (LaunchLoopEndedEventTests), and of an app hang and a fatal hang (each with the
# process's other threads) and an abnormal exit (AppHangTests). Needs a finished `swift build --build-tests`. Prints "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/interop-venv
# Pinned so that a new release of either package cannot change the verdict without a commit here.
packages=(sentry-sdk==2.75.0 sentry-relay==0.10.1)
if ! "$venv/bin/python" -c 'import sentry_sdk.envelope, sentry_relay.processing' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    if ! "$venv/bin/pip" install --quiet --only-binary=:all: "${packages[@]}"; then
        echo "check-sentry-interop: cannot install ${packages[*]} from PyPI into $venv." >&2
        echo "sentry-relay ships only prebuilt wheels (manylinux x86_64/aarch64, macOS); this machine: $(uname -sm), $("$venv/bin/python" -V)." >&2
        exit 1
    fi
fi

out=.build/interop-envelopes
rm -rf "$out"
mkdir -p "$out"
echo "== export envelopes of live crashes =="
CRASHSHIELD_INTEROP_DIR="$PWD/$out" SWIFT_BACKTRACE=enable=no swift test --skip-build --filter 'LiveCrashEnvelopeTests|aGuardIncidentBecomesAWarningEventWithItsFingerprint|incidentEventCarriesTheAppsScope|handledEventsCarryScopeAndGoThroughBeforeSend|aReportOnlyRethrowIsTheAppsCrashAndKeepsTheGuard|LaunchLoopEndedEventTests|threeSecondBlockIsOneAppHang|killedHangIsAFatalHangAtTheNextStart|killNineIsOneAbnormalExit' >"$out/export.log" 2>&1 \
    || { cat "$out/export.log"; echo "check-sentry-interop: exporting live envelopes failed" >&2; exit 1; }
live=$(find "$out" -name '*.envelope' | wc -l)
if [ "$live" -lt 16 ]; then
    cat "$out/export.log"
    echo "check-sentry-interop: expected 16 live envelopes (7 crashes, 3 incidents, 2 handled events, 1 launch loop's end, an app hang, a fatal hang, an abnormal exit), got $live" >&2
    exit 1
fi

echo "== sentry_sdk envelope reader + relay normalization =="
"$venv/bin/python" scripts/lib/sentry_interop.py Tests/Golden/Reporting/envelopes "$out"
