"""Drives the collector's dashboard in headless Chromium (Selenium): logs in, opens each page,
resolves an issue, edits and rolls back the remote configuration, checks the browser console has
no errors and saves a screenshot of each page.

usage: browser_test.py COLLECTOR_URL ADMIN_PASSWORD SCREENSHOT_DIR
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any failure.
"""
import os
import sys
import traceback

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

base, password, shots = sys.argv[1:4]
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
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
driver.set_page_load_timeout(60)


def click_and_wait(element):
    """Clicks a submit button or link and waits until the next page has replaced this one."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(old))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


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
    for document in ('{"guards": {"container": "neutralize"}}', '{"guards": {"container": "off"}}'):
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
    check("the configuration page has no console errors", not console_errors())

    click_and_wait(driver.find_element(By.CSS_SELECTOR, "form.logout button"))
    driver.get(base + "/projects")
    check("after logging out the dashboard asks for a login again", "/login" in driver.current_url, driver.current_url)
except Exception as error:  # a missing element or a timeout is a failure, not a crash of the runner
    traceback.print_exc()
    check("browser session", False, f"{error!r} at {driver.current_url}")
    driver.save_screenshot(os.path.join(shots, "99-failure.png"))
finally:
    driver.quit()

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
