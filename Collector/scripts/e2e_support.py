"""What the end-to-end scripts (sdk_e2e.py, symbolication_e2e.py) share: the checks they count
and a signed-in dashboard page fetch. Imported from the scripts' own directory."""
import http.cookiejar
import re
import urllib.parse
import urllib.request

# The failed checks of this run; each script exits 1 when any failed.
problems = []


def check(condition, what, detail=""):
    """Prints `ok: what` or `FAILED: what (detail)` and counts a failure; returns `condition`."""
    print(("ok: " if condition else "FAILED: ") + what + ("" if condition else f" ({detail})"))
    if not condition:
        problems.append(what)
    return condition


def dashboard_page(base, admin_password, path, timeout=10):
    """The dashboard page at `path`, as HTML, fetched after signing in as admin (the login form's
    CSRF token and an Origin header, as a browser sends them)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(base + "/login", timeout=10) as response:
        login_page = response.read().decode()
    csrf = re.search(r'name="login_csrf" value="([0-9a-f]+)"', login_page)
    form = urllib.parse.urlencode({"login_csrf": csrf.group(1) if csrf else "", "name": "admin",
                                   "password": admin_password}).encode()
    with opener.open(urllib.request.Request(base + "/login", data=form, headers={"Origin": base}), timeout=10) as response:
        response.read()
    with opener.open(base + path, timeout=timeout) as response:
        return response.read().decode()
