"""Drives the collector's dashboard in headless Chromium (Selenium): logs in, opens each page,
checks that the issue list's headers and badges never break inside a word and that the table
takes the page's width (at two window widths), that a batch captured over 14 days draws its
sparkline bars on those days, searches it, pages through it, resolves several issues at once,
walks an issue's events (the latest, then an older one, in full; the full stack; downloads an
attachment, checks an HTML one is served as a file and only with a login; the crashed thread of
CrashShield's own crash shows its frames), resolves an issue, edits and rolls back the remote
configuration, protects against CrashShield's own container crash with one click on its issue page, creates an API token and uses
it on the JSON API (urllib) until it is revoked, adds an account, changes the admin password and
logs in with the new one, resets the added account's password (its session, held by a script,
ends; the old password is refused, the new one logs in; with LOG_DIR, the collector's logs there
never contain the new password); checks the browser console has no errors and saves a screenshot
of each page.

usage: browser_test.py COLLECTOR_URL ADMIN_PASSWORD SCREENSHOT_DIR [LOG_DIR]
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any failure.
"""
import http.cookiejar
import json
import os
import re
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

base, password, shots = sys.argv[1:4]
log_dir = sys.argv[4] if len(sys.argv) > 4 else None
os.makedirs(shots, exist_ok=True)
passed = 0
failed = 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"PASS: {name}")
    else:
        failed += 1
        print(f"FAIL: {name} {detail}")


options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000"):
    options.add_argument(argument)
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver", log_output=os.path.join(shots, "chromedriver.log")), options=options)
driver.set_page_load_timeout(60)


def wait_until(condition, what, timeout=30):
    """Polls `condition()` until it is true. A WebDriverException other than a stale element
    while polling means a document is being replaced and is retried; after `timeout` seconds the
    wait fails naming `what` and the last such error."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except StaleElementReferenceException:
            raise
        except WebDriverException as error:
            last_error = error
        time.sleep(0.1)
    raise TimeoutError(f"waited {timeout} s for {what}; last error: {last_error!r}")


def click_and_wait(element):
    """Clicks a submit button or link and waits until the next page has replaced this one.

    ChromeDriver's click returns before a form's navigation when the server has not answered
    yet (for example a POST that takes some tens of milliseconds), and a command on the old
    document while the new one commits can then fail with a generic "unknown error" ("Node with
    given id does not belong to the document") rather than "stale element reference". Such
    errors mean the navigation is still under way: they are retried, not reported."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()

    def old_page_gone():
        try:
            old.is_enabled()
            return False
        except StaleElementReferenceException:
            return True

    wait_until(old_page_gone, "the old page to be replaced")
    wait_until(lambda: driver.execute_script("return document.readyState") == "complete", "the next page to load")


def log_in(name, secret):
    driver.get(base + "/login")
    field = driver.find_element(By.NAME, "name")
    field.clear()
    field.send_keys(name)
    driver.find_element(By.NAME, "password").send_keys(secret)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form button[type=submit]"))


def api_get(token, path):
    """GETs a JSON API path the way a script does (urllib, Authorization: Bearer); returns
    (status, parsed body or None)."""
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None


def script_session(name, secret):
    """Logs in like a script (urllib with a cookie jar); returns the opener holding the session."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(base + "/login", timeout=30) as response:
        csrf = re.search(r'name="login_csrf" value="([0-9a-f]+)"', response.read().decode())
    form = urllib.parse.urlencode({"login_csrf": csrf.group(1) if csrf else "", "name": name, "password": secret}).encode()
    with opener.open(urllib.request.Request(base + "/login", data=form, headers={"Origin": base}), timeout=30) as response:
        response.read()
    return opener


def session_lands_on(opener, path):
    """The path the session's GET of `path` ends on after redirects."""
    with opener.open(base + path, timeout=30) as response:
        return urllib.parse.urlparse(response.geturl()).path


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the 303 comes back as an HTTPError (to see where an anonymous request is sent)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def console_errors():
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def visit(path, shot, expect_text):
    driver.get(base + path)
    body = driver.find_element(By.TAG_NAME, "body").text
    check(f"{path} shows {expect_text!r}", expect_text in body, f"(title {driver.title!r}, url {driver.current_url})")
    driver.save_screenshot(os.path.join(shots, shot + ".png"))
    errors = console_errors()
    check(f"{path} has no console errors", not errors, str(errors))


try:
    driver.get(base + "/projects")
    check("an anonymous visit lands on the login page", "/login" in driver.current_url, driver.current_url)
    driver.save_screenshot(os.path.join(shots, "00-login.png"))
    driver.find_element(By.NAME, "password").send_keys("wrong password")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form button[type=submit]"))
    check("a wrong password is refused", "Wrong account name or password" in driver.find_element(By.TAG_NAME, "body").text)
    driver.get_log("browser")  # the 401 of the refused login is logged by Chromium on purpose; drop it
    driver.find_element(By.NAME, "password").send_keys(password)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form button[type=submit]"))
    check("logging in opens the projects page", driver.current_url.endswith("/projects"), driver.current_url)

    visit("/projects", "01-projects", "Projects")
    visit("/projects/1", "02-issues", "ValueError")
    visit("/projects/1/health", "03-release-health", "browser-app@1.1.0")
    visit("/projects/1/prevented", "04-prevented-crashes", "container")
    visit("/projects/1/launch", "05-launch-crashes", "reset-caches")
    visit("/projects/1/settings", "06-settings-dsn", "DSN")
    visit("/projects/new", "07-new-project", "New project")

    # The issue list: no header or badge breaks inside a word, the table takes the page's width,
    # sparklines by event time, search, pages (limit, next, previous) and a bulk status change.
    def words_broken(selector):
        """Words in the elements matching `selector` that the browser split over two lines."""
        return driver.execute_script("""
            const broken = [];
            for (const element of document.querySelectorAll(arguments[0])) {
                const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    for (const match of node.textContent.matchAll(/\\S+/g)) {
                        const range = document.createRange();
                        range.setStart(node, match.index);
                        range.setEnd(node, match.index + match[0].length);
                        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
                        if (lines.size > 1) broken.push(match[0]);
                    }
                }
            }
            return broken;""", selector)

    def list_titles():
        return [link.text.split(":")[0] for link in driver.find_elements(By.CSS_SELECTOR, "table.issues td.issue > a")]

    for width, shot in ((1280, "20-issue-list"), (820, "20b-issue-list-narrow")):
        driver.set_window_size(width, 1000)
        driver.get(base + "/projects/1?limit=25")
        broken = words_broken("table.issues th, table.issues .badge")
        check(f"at {width} px no header or badge of the issue list breaks inside a word", not broken, str(broken))
        table_width, page_width = driver.execute_script(
            "return [document.querySelector('table.issues').getBoundingClientRect().width, document.documentElement.clientWidth]")
        check(f"at {width} px the issue list takes the page's width", table_width >= page_width - 60, f"{table_width} of {page_width}")
        driver.save_screenshot(os.path.join(shots, shot + ".png"))
    driver.set_window_size(1280, 1000)
    driver.get(base + "/projects/1?limit=25")
    check("the issue list shows 25 issues per page", len(list_titles()) == 25, str(list_titles()))
    summary = driver.find_element(By.CSS_SELECTOR, "[data-summary]").text
    total = re.search(r"of (\d+) matching", summary)
    check("the issue list counts every open issue, beyond one page", total is not None and int(total.group(1)) > 60, summary)
    # The batch was captured over the 14 days before today: its bars stand on those days, not today.
    driver.get(base + "/projects/1?query=BatchError03")
    bars = [element.get_attribute("textContent") for element in driver.find_elements(By.CSS_SELECTOR, "svg.spark rect title")]
    today = time.strftime("%m-%d", time.gmtime())
    check("a batch issue's sparkline has a bar on each of its events' days, none today",
          len(bars) == 2 and all(not bar.startswith(today) for bar in bars), str(bars))

    # Search from the form.
    driver.get(base + "/projects/1")
    search = driver.find_element(By.CSS_SELECTOR, "form.filters input[name=query]")
    search.send_keys("BatchError07")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.filters button[data-action=search]"))
    check("searching finds exactly the issue", list_titles() == ["BatchError07"], str(list_titles()))
    driver.save_screenshot(os.path.join(shots, "21-issue-search.png"))

    # Pages: next, next, previous.
    driver.get(base + "/projects/1?query=BatchError&sort=first_seen&limit=25")
    pages = [list_titles()]
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "a[rel=next]"))
    pages.append(list_titles())
    driver.save_screenshot(os.path.join(shots, "22-issue-list-page-2.png"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "a[rel=next]"))
    pages.append(list_titles())
    check("three pages list the 60 batch issues once each", [len(page) for page in pages] == [25, 25, 10]
          and len(set(sum(pages, []))) == 60, str([len(page) for page in pages]))
    check("the last page has no next link", not driver.find_elements(By.CSS_SELECTOR, "a[rel=next]"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "a[rel=prev]"))
    check("previous returns to the second page", list_titles() == pages[1], str(list_titles()))

    # Bulk: resolve three checked issues of a search.
    driver.get(base + "/projects/1?query=BatchError1")
    before = list_titles()
    boxes = driver.find_elements(By.CSS_SELECTOR, "table.issues input[type=checkbox][name=issue]")
    for box in boxes[:3]:
        box.click()
    driver.save_screenshot(os.path.join(shots, "23-issue-list-selected.png"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-bulk=resolved]"))
    notice = driver.find_element(By.CSS_SELECTOR, "p.notice").text
    check("the bulk action reports what it did", notice == "3 issues set to resolved.", notice)
    check("the resolved issues leave the open list", len(list_titles()) == len(before) - 3 and set(list_titles()) < set(before),
          f"{before} -> {list_titles()}")
    driver.save_screenshot(os.path.join(shots, "24-issue-list-bulk-resolved.png"))
    driver.get(base + "/projects/1?query=BatchError1&status=resolved")
    check("they are listed as resolved", len(list_titles()) == 3, str(list_titles()))
    # The compact actions of one row.
    driver.get(base + "/projects/1?query=BatchError2")
    driver.find_element(By.CSS_SELECTOR, "table.issues details.menu summary").click()
    check("a row's actions open from its menu", driver.find_element(By.CSS_SELECTOR, "table.issues details.menu button[data-action=resolved]").is_displayed())
    driver.save_screenshot(os.path.join(shots, "25-issue-row-actions.png"))
    check("the issue list has no console errors", not console_errors())

    # The issue page of the ValueError issue.
    driver.get(base + "/projects/1?status=all")
    link = driver.find_element(By.PARTIAL_LINK_TEXT, "ValueError")
    click_and_wait(link)
    issue_url = driver.current_url
    body = driver.find_element(By.TAG_NAME, "body").text
    check("the issue page shows the raising function", "parse_header" in body)
    check("the issue page shows the breadcrumb as text", "tapped <Settings>" in body)
    check("the issue page shows the OS breakdown", "iOS 17.4" in body)
    driver.save_screenshot(os.path.join(shots, "08-issue.png"))
    check("the issue page has no console errors", not console_errors())

    # Its events: the latest is shown in full; "Older" opens the other one, in full as well.
    latest_id = driver.find_element(By.CSS_SELECTOR, "[data-event-id]").text
    check("the issue page shows its latest event", "Latest event" in body and "browser-app@1.1.0 · test" in body, latest_id)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "a[data-nav=older]"))
    older_id = driver.find_element(By.CSS_SELECTOR, "[data-event-id]").text
    body = driver.find_element(By.TAG_NAME, "body").text
    check("'Older' opens the older event at its own URL", older_id != latest_id and driver.current_url.endswith(f"/events/{older_id}")
          and "browser-app@1.0.0 · test" in body, driver.current_url)
    check("the older event is shown in full", "parse_header" in body and "ada@example.com" in body and "coupon" in body and "SPRING" in body)
    check("breadcrumb data is shown", "view: SettingsViewController" in body)
    check("the SDK section names the SDK", "sentry.python" in body)
    check("json's own frames are hidden by default", "raw_decode" not in body)
    check("a link leads back to the newer event", driver.find_element(By.CSS_SELECTOR, "a[data-nav=newer]").get_attribute("href").endswith(latest_id))
    driver.save_screenshot(os.path.join(shots, "08b-issue-older-event.png"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "a[data-stack=full]"))
    body = driver.find_element(By.TAG_NAME, "body").text
    check("the full stack shows json's frames", "raw_decode" in body and "stack=full" in driver.current_url and "browser-app@1.0.0" in body)
    driver.save_screenshot(os.path.join(shots, "08c-issue-full-stack.png"))
    for selector, shot in (("section.user", "08d-issue-user-request"), ("section.contexts", "08e-issue-contexts-extra-sdk")):
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", driver.find_element(By.CSS_SELECTOR, selector))
        driver.save_screenshot(os.path.join(shots, shot + ".png"))

    # Attachments: listed with their names as text; a click downloads the file, never renders it.
    section = driver.find_element(By.CSS_SELECTOR, "section.attachments")
    check("the attachments are listed", "app.log" in section.text and "<b>report</b>.html" in section.text and "text/plain" in section.text,
          section.text)
    check("an attachment's name is not markup", not section.find_elements(By.CSS_SELECTOR, "b"))
    downloads = os.path.abspath(os.path.join(shots, "downloads"))
    os.makedirs(downloads, exist_ok=True)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    link = section.find_element(By.PARTIAL_LINK_TEXT, "app.log")
    page_url = driver.current_url
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    saved = os.path.join(downloads, "app.log")
    wait_until(lambda: os.path.exists(saved) and os.path.getsize(saved) > 0, "the attachment download")
    with open(saved, "rb") as download:
        check("the downloaded attachment holds the bytes sent", download.read() == b"log of browser-app@1.0.0\n")
    check("downloading leaves the page in place", driver.current_url == page_url, driver.current_url)
    driver.save_screenshot(os.path.join(shots, "08f-issue-attachments.png"))
    cookie = driver.get_cookie("csc_session")["value"]
    hostile = section.find_element(By.PARTIAL_LINK_TEXT, "report").get_attribute("href")
    with urllib.request.urlopen(urllib.request.Request(hostile, headers={"Cookie": f"csc_session={cookie}"}), timeout=30) as response:
        headers = response.headers
        check("an HTML attachment downloads as a file", headers["Content-Type"] == "application/octet-stream"
              and headers["Content-Disposition"].startswith("attachment;") and headers["X-Content-Type-Options"] == "nosniff",
              str(dict(headers)))
        check("an HTML attachment's bytes are as sent", response.read() == b"<script>alert('attachment')</script>")
    try:
        with urllib.request.build_opener(NoRedirect).open(hostile, timeout=30) as response:
            anonymous = (response.status, response.headers.get("Location", ""))
    except urllib.error.HTTPError as error:
        anonymous = (error.code, error.headers.get("Location", ""))
    check("an attachment needs a login", anonymous[0] == 303 and anonymous[1].startswith("/login"), str(anonymous))
    check("the event pages have no console errors", not console_errors())

    # CrashShield's own crash: the crashed thread shows the exception's frames.
    driver.get(base + "/projects/1?status=all")
    click_and_wait(driver.find_element(By.PARTIAL_LINK_TEXT, "bad memory access"))
    thread = driver.find_element(By.CSS_SELECTOR, "details[data-thread='29661']")
    check("the crashed thread of a CrashShield crash shows its frames", "csc_crash_segv" in thread.text and "No stack frames" not in thread.text,
          thread.text[:300])
    check("frames name their package and address", "shield" in thread.text and "0x565401d00f00" in thread.text)
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", thread)
    driver.save_screenshot(os.path.join(shots, "08g-crashed-thread.png"))
    driver.get(issue_url)

    # Resolve it.
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-action=resolved]"))
    check("resolving returns to the issue", driver.current_url == issue_url, driver.current_url)
    check("the issue is resolved", "resolved" in driver.find_element(By.CSS_SELECTOR, ".card .badge").text)
    driver.save_screenshot(os.path.join(shots, "09-issue-resolved.png"))

    # The hostile event renders as text: no alert, its markup visible.
    driver.get(base + "/projects/1?status=all")
    click_and_wait(driver.find_element(By.PARTIAL_LINK_TEXT, "<script>"))
    body = driver.find_element(By.TAG_NAME, "body").text
    check("markup in an event renders as text", "<script>alert('x')</script>" in body and "<img src=x onerror=alert(1)>" in body)
    check("no script from an event ran", not driver.find_elements(By.CSS_SELECTOR, "main script, main img"))
    driver.save_screenshot(os.path.join(shots, "10-hostile-event.png"))
    check("the hostile event page has no console errors", not console_errors())

    # Remote configuration: publish two versions, then roll back to the first.
    for document in ('{"rules": [{"guards": {"container": "neutralize"}}]}', '{"rules": [{"guards": {"container": "off"}}]}'):
        driver.get(base + "/projects/1/config")
        area = driver.find_element(By.NAME, "document")
        area.clear()
        area.send_keys(document)
        click_and_wait(driver.find_element(By.CSS_SELECTOR, "form[action$='/config'] button[type=submit]"))
    body = driver.find_element(By.TAG_NAME, "body").text
    check("two configuration versions are published", "Served now: v2" in body, body[:300])
    driver.save_screenshot(os.path.join(shots, "11-remote-config.png"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-rollback='1']"))
    body = driver.find_element(By.TAG_NAME, "body").text
    check("rolling back serves v3 with v1's content", "Served now: v3" in body and "rollback to v1" in body, body[:300])
    check("the served document is v1's", '"container" : "neutralize"' in driver.find_element(By.NAME, "document").get_attribute("value"))
    driver.save_screenshot(os.path.join(shots, "12-remote-config-rolled-back.png"))
    # The history, with its "By" column, is below the fold of that screenshot: scroll to it for one of its own.
    history = driver.find_element(By.ID, "history")
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", history)
    publishers = [element.text for element in driver.find_elements(By.CSS_SELECTOR, "[data-published-by]")]
    check("the history names who published or rolled back each version", len(publishers) == 3 and all("admin" in name for name in publishers),
          str(publishers))
    check("the history's heading and table are in view for its screenshot", driver.execute_script(
        "const table = arguments[0].nextElementSibling.getBoundingClientRect();"
        " return arguments[0].getBoundingClientRect().top >= 0 && table.bottom <= window.innerHeight", history))
    driver.save_screenshot(os.path.join(shots, "12b-remote-config-history.png"))
    check("the configuration page has no console errors", not console_errors())

    # One click protects: CrashShield's own crash of an out-of-bounds -[NSArray objectAtIndex:]
    # with the guards off (a fixture of scripts/verdict_fixtures.py) is sent to the project; its
    # issue page names the container guard, and one click publishes the switch for its release.
    driver.get(base + "/projects/1/settings")
    project_dsn = urllib.parse.urlparse(driver.find_element(By.CSS_SELECTOR, "pre.dsn").text.strip())
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "CollectorTests", "Fixtures",
                           "Verdicts", "array.objectAtIndex.beyond.json")
    with open(fixture) as handle:
        crash = json.load(handle)
    crash.update({"event_id": os.urandom(16).hex(), "timestamp": time.time(), "release": "browser-app@1.2.0"})
    envelope = (json.dumps({"event_id": crash["event_id"]}) + "\n" + json.dumps({"type": "event"}) + "\n" + json.dumps(crash) + "\n").encode()
    request = urllib.request.Request(f"{base}/api{project_dsn.path}/envelope/", data=envelope, headers={
        "X-Sentry-Auth": f"Sentry sentry_version=7, sentry_key={project_dsn.username}",
        "Content-Type": "application/x-sentry-envelope"})
    with urllib.request.urlopen(request, timeout=10) as response:
        check("the SDK's container crash is accepted", response.status == 200)
    driver.get(base + "/projects/1?status=all&query=NSRangeException")
    click_and_wait(driver.find_element(By.PARTIAL_LINK_TEXT, "NSRangeException"))
    verdict = driver.find_elements(By.CSS_SELECTOR, "[data-verdict]")
    check("the crash's issue page says: container guard", verdict and verdict[0].get_attribute("data-verdict") == "container"
          and "container guard" in verdict[0].text, verdict[0].text if verdict else "no verdict")
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", driver.find_element(By.ID, "protection"))
    driver.save_screenshot(os.path.join(shots, "26-issue-protection.png"))
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-protect='reportOnly']"))
    rows = driver.find_elements(By.CSS_SELECTOR, "table[data-protections] tbody tr")
    # The document served before (v1's content) already neutralises the container guard for
    # every app: a report-only click never weakens it, and the protection says what apps get.
    check("one click protects the release: container for browser-app@1.2.0, kept at neutralize",
          len(rows) == 1 and "container" in rows[0].text and "neutralize" in rows[0].text and "browser-app@1.2.0" in rows[0].text,
          [row.text for row in rows])
    driver.get(base + "/projects/1/config")
    served = json.loads(driver.find_element(By.NAME, "document").get_attribute("value"))
    rules = served.get("rules") or [{}]
    check("the served document has a rule for app version 1.2.0 in front, keeping neutralize, and the old rule after it",
          len(rules) == 2 and rules[0].get("when") == {"app_version": "=1.2.0"}
          and rules[0].get("guards") == {"container": "neutralize"} and rules[1].get("guards") == {"container": "neutralize"}
          and not (rules[1].get("when") or {}), rules)
    reasons = [element.text for element in driver.find_elements(By.CSS_SELECTOR, "[data-reason]")]
    publishers = [element.text for element in driver.find_elements(By.CSS_SELECTOR, "[data-published-by]")]
    check("the history names who protected which issue and why", reasons and "container reportOnly for browser-app@1.2.0" in reasons[0]
          and publishers and "admin" in publishers[0], (reasons, publishers))
    check("the protection pages have no console errors", not console_errors())

    # API tokens: create one, use it from a script (urllib), revoke it.
    visit("/account", "13-account", "API tokens")
    driver.find_element(By.CSS_SELECTOR, "form[action='/account/tokens'] input[name=name]").send_keys("browser script")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-action=create-token]"))
    token = driver.find_element(By.ID, "new-token").text.strip()
    check("a new API token is shown once", token.startswith("csc_") and len(token) == 68, token)
    driver.save_screenshot(os.path.join(shots, "14-token-created.png"))
    status, projects = api_get(token, "/api/0/projects")
    check("the new token lists the projects on the JSON API", status == 200 and "default" in [p.get("name") for p in projects or []], f"{status} {projects}")
    driver.get(base + "/account")
    row = driver.find_element(By.XPATH, "//table[contains(@class,'tokens')]//tr[td[1]='browser script']").text
    check("the token list shows the token's last use", "never" not in row and "UTC" in row, row)
    check("the account page no longer shows the token", token not in driver.page_source)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-revoke='browser script']"))
    check("revoking removes the token from the list", "browser script" not in driver.find_element(By.TAG_NAME, "body").text)
    driver.save_screenshot(os.path.join(shots, "15-token-revoked.png"))
    status, _ = api_get(token, "/api/0/projects")
    check("a revoked token is refused with 401", status == 401, str(status))
    check("the account page has no console errors", not console_errors())

    # Accounts: an admin adds one with a generated password.
    visit("/accounts", "16-accounts", "Add an account")
    driver.find_element(By.CSS_SELECTOR, "form[action='/accounts'] input[name=name]").send_keys("browser-viewer")
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-action=add-account]"))
    viewer_password = driver.find_element(By.ID, "new-password").text.strip()
    check("a new account's generated password is shown once", len(viewer_password) == 36, viewer_password)
    check("the new account is listed", "browser-viewer" in driver.find_element(By.CSS_SELECTOR, "table.accounts").text)
    driver.save_screenshot(os.path.join(shots, "17-account-added.png"))

    # Change the admin's password, then log in with the new one (the old one is refused).
    new_password = "changed-" + password
    driver.get(base + "/account")
    driver.find_element(By.NAME, "current_password").send_keys(password)
    driver.find_element(By.NAME, "new_password").send_keys(new_password)
    driver.find_element(By.NAME, "new_password_again").send_keys(new_password)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-action=change-password]"))
    check("the password change is confirmed", "Your password was changed" in driver.find_element(By.TAG_NAME, "body").text)
    driver.save_screenshot(os.path.join(shots, "18-password-changed.png"))
    check("the password pages have no console errors", not console_errors())
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.logout button"))
    log_in("admin", password)
    check("the old password is refused", "Wrong account name or password" in driver.find_element(By.TAG_NAME, "body").text)
    driver.get_log("browser")  # the refused login's 401, logged on purpose
    log_in("admin", new_password)
    check("the new password logs in", driver.current_url.endswith("/projects"), driver.current_url)

    # The admin resets the added account's password while a script holds a session of it.
    viewer_script = script_session("browser-viewer", viewer_password)
    check("the added account's script session opens the projects page", session_lands_on(viewer_script, "/projects") == "/projects")
    reset_password = "reset-" + password
    driver.get(base + "/accounts")
    driver.find_element(By.CSS_SELECTOR, "input[data-reset-password='browser-viewer']").send_keys(reset_password)
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "button[data-reset='browser-viewer']"))
    check("the reset password is shown once", driver.find_element(By.ID, "reset-password").text.strip() == reset_password)
    driver.save_screenshot(os.path.join(shots, "19-password-reset.png"))
    check("the accounts page has no console errors after the reset", not console_errors())
    driver.get(base + "/accounts")
    check("the reset password is not shown again", reset_password not in driver.page_source)
    check("the reset ended the account's session", session_lands_on(viewer_script, "/projects") == "/login")
    check("the admin's own session stays", driver.current_url.endswith("/accounts"), driver.current_url)

    # The added account logs in with the reset password (not the old one) and is no admin.
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.logout button"))
    log_in("browser-viewer", viewer_password)
    check("the added account's old password is refused", "Wrong account name or password" in driver.find_element(By.TAG_NAME, "body").text)
    driver.get_log("browser")  # the refused login's 401, logged on purpose
    log_in("browser-viewer", reset_password)
    check("the added account logs in", driver.current_url.endswith("/projects"), driver.current_url)
    check("a member has no Accounts link", not driver.find_elements(By.CSS_SELECTOR, "header a[href='/accounts']"))
    driver.get(base + "/accounts")
    check("a member is refused the accounts page", "account.admin_only" in driver.find_element(By.TAG_NAME, "body").text)
    driver.get_log("browser")  # the 403, logged on purpose

    driver.get(base + "/projects")  # the error page has no header; log out from a page that has
    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.logout button"))
    driver.get(base + "/projects")
    check("after logging out the dashboard asks for a login again", "/login" in driver.current_url, driver.current_url)
    if log_dir:
        logged = ""
        for name in sorted(os.listdir(log_dir)):
            if name.endswith(".log"):
                with open(os.path.join(log_dir, name), errors="replace") as log:
                    logged += log.read()
        check("the collector's logs record the reset", "password reset" in logged)
        check("the collector's logs never contain the reset password", reset_password not in logged)
except Exception as error:  # a missing element or a timeout is a failure, not a crash of the runner
    traceback.print_exc()
    check("browser session", False, f"{error!r} at {driver.current_url}")
    driver.save_screenshot(os.path.join(shots, "99-failure.png"))
    with open(os.path.join(shots, "99-failure.html"), "w") as page:
        page.write(driver.page_source)
finally:
    driver.quit()

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
