"""What the collector's process tests send and read, as an SDK and a dashboard reader would.

post_envelope() posts one event as a Sentry envelope; get() reads a route. Both return
(status, headers, body) for every HTTP answer, 2xx or not; a connection that fails raises
(urllib.error.URLError), which is for the caller to count.
"""
import json
import os
import urllib.error
import urllib.request


def post_envelope(url, project, key, event_id, padding=0, timeout=15):
    """One fatal event `event_id` (release app@1.0), with `padding` random bytes in extra (hex)."""
    event = {"event_id": event_id, "level": "fatal", "message": f"crash {event_id}", "release": "app@1.0"}
    if padding:
        event["extra"] = {"padding": os.urandom(padding).hex()}
    payload = json.dumps(event).encode()
    body = json.dumps({"event_id": event_id}).encode() + b"\n" + \
        json.dumps({"type": "event", "length": len(payload)}).encode() + b"\n" + payload + b"\n"
    request = urllib.request.Request(f"{url}/api/{project}/envelope/", data=body, method="POST",
                                     headers={"X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def get(url, token=None, timeout=15):
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
