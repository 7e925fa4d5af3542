"""Reads CrashShield's envelopes with Sentry's own code and fails on anything Sentry would not take.

Usage: sentry_interop.py FILE_OR_DIR...   (every *.envelope file under a directory)

For each envelope:
  * sentry_sdk.envelope.Envelope.deserialize must read it, with at least one item, no `sent_at`
    header, and an `event_id` header equal to the event's id when there is an event;
  * every event item goes through Relay's store normalization (sentry_relay.processing.StoreNormalizer,
    the code Sentry's ingestion runs): the normalized event must have no `errors`, no error
    annotation anywhere in `_meta`, and every field sent must come out with the same value (no
    field silently dropped or rewritten);
  * session items must carry sid, started, status, attrs.release; client reports discarded_events.

A negative canary runs first: a deliberately broken event must be flagged by the same checks, so
this script cannot pass because the checks stopped checking. Prints one line per check and a
closing "N passed, M failed"; exits 1 when anything failed.
"""

import json
import os
import sys
import uuid

from sentry_sdk.envelope import Envelope
from sentry_relay.processing import StoreNormalizer

NORMALIZER = StoreNormalizer(project_id=1)


def meta_errors(meta, path=""):
    """Every `err` annotation under a `_meta` tree, as "path: error"."""
    found = []
    if isinstance(meta, dict):
        for key, value in meta.items():
            if key == "" and isinstance(value, dict) and value.get("err"):
                found.append(f"{path or '<event>'}: {value['err']}")
            else:
                found.extend(meta_errors(value, f"{path}.{key}" if path else key))
    return found


def leaves(value, path=()):
    """(path, value) for every leaf of a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, path + (index,))
    else:
        yield path, value


def lookup(value, path):
    for key in path:
        if isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return None
    return value


def dropped_fields(event, normalized):
    """Fields of `event` that normalization removed or changed. Relay writes tags as a list of
    pairs and timestamps as numbers: those forms are compared as such."""
    problems = []
    sent_tags = event.get("tags") or {}
    kept_tags = dict(tuple(pair) for pair in normalized.get("tags") or [] if isinstance(pair, list) and len(pair) == 2)
    for key, value in sent_tags.items():
        if kept_tags.get(key) != value:
            problems.append(f"tag {key!r}={value!r} became {kept_tags.get(key)!r}")
    for path, value in leaves({k: v for k, v in event.items() if k != "tags"}):
        if path and path[-1] == "timestamp":
            if lookup(normalized, path) is None:
                problems.append(f"{'.'.join(map(str, path))} was dropped")
            continue
        kept = lookup(normalized, path)
        if kept != value:
            problems.append(f"{'.'.join(map(str, path))}: sent {value!r}, normalized {kept!r}")
    return problems


def event_problems(event):
    """What Relay's normalization finds wrong with `event` (a dict); [] when nothing."""
    problems = []
    normalized = NORMALIZER.normalize_event(event)
    for error in normalized.get("errors") or []:
        problems.append(f"relay error: {json.dumps(error, sort_keys=True)}")
    problems.extend(f"relay _meta error: {e}" for e in meta_errors(normalized.get("_meta") or {}))
    problems.extend(dropped_fields(event, normalized)[:20])
    for key in ("event_id", "level", "platform", "timestamp"):
        if normalized.get(key) in (None, ""):
            problems.append(f"normalized event lost {key}")
    if normalized.get("event_id") != event.get("event_id"):
        problems.append("event_id changed by normalization")
    exceptions = (normalized.get("exception") or {}).get("values") or []
    if "exception" not in event and "logentry" in event:
        # A message event (a launch loop's end): its text must survive as sent.
        if (normalized.get("logentry") or {}).get("formatted") != event["logentry"].get("formatted"):
            problems.append("the logentry's formatted message did not survive normalization")
    elif not exceptions:
        problems.append("no exception survived normalization")
    for exc in exceptions:
        if not (exc.get("mechanism") or {}).get("type"):
            problems.append("an exception lost its mechanism")
        for frame in (exc.get("stacktrace") or {}).get("frames") or []:
            if not frame.get("instruction_addr") and not frame.get("function"):
                problems.append("a frame has neither instruction_addr nor function")
    for image in (normalized.get("debug_meta") or {}).get("images") or []:
        if not image.get("debug_id"):
            problems.append(f"image without debug_id: {image.get('code_file')}")
    return problems


def session_problems(session):
    problems = []
    for key in ("sid", "started", "timestamp", "status"):
        if not session.get(key):
            problems.append(f"session without {key}")
    try:
        uuid.UUID(str(session.get("sid")))
    except ValueError:
        problems.append("session sid is not a UUID")
    if session.get("status") not in ("ok", "exited", "crashed", "abnormal", "errored"):
        problems.append(f"session status {session.get('status')!r}")
    if not (session.get("attrs") or {}).get("release"):
        problems.append("session without attrs.release")
    if not isinstance(session.get("init"), bool):
        problems.append("session init is not a boolean")
    return problems


def envelope_problems(data):
    """Everything wrong with envelope bytes `data`, and the item types read."""
    problems = []
    try:
        envelope = Envelope.deserialize(data)
    except Exception as error:  # the reader's own failure is the finding
        return [f"sentry_sdk cannot read the envelope: {error!r}"], []
    if envelope is None or not envelope.items:
        return ["sentry_sdk read no items"], []
    headers = envelope.headers or {}
    if "sent_at" in headers:
        problems.append("a stored envelope carries sent_at")
    if not (headers.get("sdk") or {}).get("name"):
        problems.append("envelope header without sdk.name")
    types = []
    for item in envelope.items:
        kind = item.headers.get("type")
        types.append(kind)
        length = item.headers.get("length")
        payload = item.payload.get_bytes()
        if length is not None and length != len(payload):
            problems.append(f"{kind}: length {length} but {len(payload)} payload bytes")
        try:
            body = json.loads(payload)
        except ValueError as error:
            problems.append(f"{kind}: payload is not JSON ({error})")
            continue
        if kind == "event":
            if headers.get("event_id") != body.get("event_id"):
                problems.append("envelope event_id differs from the event's")
            problems.extend(event_problems(body))
        elif kind == "session":
            problems.extend(session_problems(body))
        elif kind == "client_report":
            if not body.get("discarded_events"):
                problems.append("client report without discarded_events")
            for entry in body.get("discarded_events") or []:
                if not entry.get("reason") or not entry.get("category") or not isinstance(entry.get("quantity"), int):
                    problems.append(f"bad discarded_events entry {entry}")
        else:
            problems.append(f"unexpected item type {kind!r}")
    return problems, types


def canary():
    """A broken event and a broken envelope must be flagged."""
    broken_event = {
        "event_id": "0" * 32, "timestamp": "not a time", "platform": "native", "level": "fatal",
        "exception": {"values": [{"type": "SIGSEGV", "mechanism": {"type": "signalhandler"},
                                  "stacktrace": {"frames": [{"instruction_addr": "0xnothex"}]}}]},
        "debug_meta": {"images": [{"type": "elf", "image_addr": "0x1000", "image_size": 1}]},
        "made_up_field": 1,
    }
    flagged_event = event_problems(broken_event)
    flagged_envelope, _ = envelope_problems(b'{"sent_at":"2020-01-01T00:00:00Z"}\n{"type":"event","length":3}\n{"x\n')
    return flagged_event, flagged_envelope


def main(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith(".envelope"):
                    files.append(os.path.join(path, name))
        else:
            files.append(path)
    passed = failed = 0

    flagged_event, flagged_envelope = canary()
    if flagged_event and flagged_envelope:
        passed += 1
        print(f"ok   canary: a broken event is flagged ({len(flagged_event)} problems), a broken envelope too")
    else:
        failed += 1
        print(f"FAIL canary: broken input was not flagged (event: {flagged_event}, envelope: {flagged_envelope})")

    if not files:
        failed += 1
        print("FAIL no envelopes to check")
    for path in files:
        with open(path, "rb") as handle:
            problems, types = envelope_problems(handle.read())
        name = os.path.relpath(path)
        if problems:
            failed += 1
            print(f"FAIL {name} [{', '.join(map(str, types))}]")
            for problem in problems:
                print(f"       {problem}")
        else:
            passed += 1
            print(f"ok   {name} [{', '.join(map(str, types))}]")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
