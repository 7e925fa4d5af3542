"""Regenerates the crash events GuardVerdictTests reads (Tests/CollectorTests/Fixtures/Verdicts).

usage: python3 scripts/verdict_fixtures.py [SHIELD_BINARY]   (default: ../.build/debug/shield)

For each scenario below, a child `shield crash scenario --scenario NAME --dir D` runs CrashShield's
own misuse scenario with crash capture on and the guards off, with no try/catch around it, so the
misuse crashes the child as it would crash an app (an uncaught exception, or a signal); then
`shield envelope --dir D --dsn ...` prints the Sentry event the SDK's next start would send for
that report, and the event is written to <scenario>.json. Every child runs with a timeout. The
event is the SDK's, unedited: ids, times and addresses differ from one run to the next; the tests
read only what a verdict reads (exception type, reason, signal, function names).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "Tests", "CollectorTests", "Fixtures", "Verdicts")
SHIELD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", ".build", "debug", "shield")
DSN = "http://0123456789abcdef0123456789abcdef@127.0.0.1:9/1"
# One scenario per verdict rule (GuardVerdicts.rules) and the crashes no guard covers.
SCENARIOS = [
    "array.objectAtIndex.beyond", "mdict.setObjectForKey.nilKey", "oset.objectAtIndex.beyond",
    "string.substringFromIndex.beyond", "string.characterAtIndex.beyond",
    "selector.missingObject.instance", "selector.missingClassObject.class", "nsnull.length.null",
    "kvc.valueForKey.undefinedKey", "kvc.setValue.nilScalar", "kvo.removeObserverContext.neverAdded",
    "notification.observer.deallocRegistered", "zombie.message.object",
]
# Crashes of `shield crash <kind>` that no guard covers (the negative tests).
KINDS = ["segv", "abort", "cxx-exception", "objc-exception"]


def event_of(directory):
    result = subprocess.run([SHIELD, "envelope", "--dir", directory, "--dsn", DSN], capture_output=True,
                            encoding="utf-8", errors="replace", timeout=60)
    lines = result.stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("# crash report "):
            # The envelope header, then each item's header and its payload, one line each.
            rest = lines[index + 2:]
            for position in range(0, len(rest) - 1, 2):
                header = json.loads(rest[position])
                if header.get("type") == "event":
                    return json.loads(rest[position + 1])
    return None


def capture(name, arguments):
    with tempfile.TemporaryDirectory() as directory:
        env = dict(os.environ, SWIFT_BACKTRACE="enable=no")
        try:
            subprocess.run([SHIELD, "crash"] + arguments + ["--dir", directory, "--app-name", "verdict-fixture"],
                           capture_output=True, timeout=60, env=env)
        except subprocess.TimeoutExpired:
            print(f"{name}: timed out")
            return False
        event = event_of(directory)
        if event is None:
            print(f"{name}: no crash report")
            return False
        with open(os.path.join(OUT, name + ".json"), "w") as out:
            json.dump(event, out, indent=1, sort_keys=True)
            out.write("\n")
        last = ((event.get("exception") or {}).get("values") or [{}])[-1]
        print(f"{name}: {last.get('type')}: {(last.get('value') or '')[:90]}")
        return True


os.makedirs(OUT, exist_ok=True)
ok = all([capture(name, ["scenario", "--scenario", name]) for name in SCENARIOS]
         + [capture("crash-" + kind, [kind]) for kind in KINDS])
sys.exit(0 if ok else 1)
