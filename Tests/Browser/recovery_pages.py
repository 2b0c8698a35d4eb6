#!/usr/bin/python3
"""Drives the account-recovery pages (/reset-password, /verify-email) in headless Chromium.

Run with Debian's /usr/bin/python3 (python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Browser/recovery_pages.py --reset-link URL --new-password PW \
        --verify-link URL --expect-email EMAIL --screenshots DIR [--invalid-reset-link URL]

The links are the real ones the server mailed. Prints one line per step, saves a PNG of each page
state in DIR and exits non-zero with a FAIL line on a wrong page state, a timeout, any SEVERE
browser console entry or any Content-Security-Policy violation.
"""

import argparse
import json
import os
import sys
from urllib.parse import urlsplit, urlunsplit

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as error:
    sys.exit(f"FAIL: selenium is not importable ({error}); run with /usr/bin/python3 and install python3-selenium")

PHONE = (390, 844)
LAPTOP = (1280, 800)

# The texts the pages show (Sources/API/Resources/pages/*.js).
TEXT_MISMATCH = "The two passwords do not match."
TEXT_TOO_SHORT = "Use at least 8 characters."
TEXT_RESET_DONE = "Your password has been changed. You can now sign in with it in the app."
TEXT_VERIFIED = "Your email address {email} is verified."
TEXT_NO_TOKEN = "This link is incomplete."
TOO_SHORT_PASSWORD = "short12"  # 7 characters: one under the minimum

CONFIRM_PATH = "/users/password-reset/confirm"

# Runs before any page script, outside the page's CSP: records violations the browser might not
# log to the console, so a CSP problem cannot slip through either way.
CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


class Failure(Exception):
    pass


def step(text):
    print(f"step: {text}", flush=True)


class Browser:
    def __init__(self, timeout, screenshots):
        self.timeout = timeout
        self.screenshots = screenshots
        options = webdriver.ChromeOptions()
        options.add_argument("--headless=new")
        options.add_argument("--disable-dev-shm-usage")
        if os.geteuid() == 0:
            options.add_argument("--no-sandbox")  # Chromium's sandbox refuses to run as root
        options.add_argument(f"--window-size={PHONE[0]},{PHONE[1]}")
        # browser: console entries to judge; performance: network events, to read the API's answers.
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        self.driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
        self.driver.set_page_load_timeout(timeout)
        self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_LISTENER})
        self.network = []  # performance-log messages not consumed yet

    def quit(self):
        self.driver.quit()

    def open(self, url, size):
        # Leave the previous page first: a link that differs only in its fragment would otherwise be
        # a same-document navigation, not the fresh load a click in a mail client gives.
        self.driver.get("about:blank")
        self.driver.set_window_size(*size)
        self.drain_network()
        self.network = []
        self.driver.get(url)

    def element(self, id):
        return self.driver.find_element(By.ID, id)

    def wait(self, description, condition):
        try:
            return WebDriverWait(self.driver, self.timeout).until(lambda driver: condition())
        except TimeoutException:
            shown = self.driver.find_element(By.ID, "message").text if self.driver.find_elements(By.ID, "message") else ""
            raise Failure(f"timed out after {self.timeout}s waiting for {description}; the page's message is {shown!r}")

    def wait_for_text(self, id, text):
        self.wait(f"{text!r} in #{id}", lambda: self.element(id).is_displayed() and text in self.element(id).text)

    def screenshot(self, name):
        path = os.path.join(self.screenshots, name)
        if not self.driver.save_screenshot(path):
            raise Failure(f"could not save {path}")
        print(f"  screenshot {path}", flush=True)

    def check_fragment_gone(self):
        url = self.driver.current_url
        if "#" in url or "token=" in url:
            raise Failure(f"the token is still in the address bar: {url}")

    def drain_network(self):
        for entry in self.driver.get_log("performance"):
            self.network.append(json.loads(entry["message"])["message"])

    def api_responses(self, path):
        """(requestId, status) of each response to `path` since the last open()."""
        self.drain_network()
        return [(m["params"]["requestId"], m["params"]["response"]["status"])
                for m in self.network
                if m["method"] == "Network.responseReceived" and urlsplit(m["params"]["response"]["url"]).path == path]

    @staticmethod
    def expected_network_error(text, allowed_network_status):
        """Chromium logs every 4xx answer as a SEVERE "network" entry. Two are not faults of the
        pages: the browser's own request for /favicon.ico (the pages name no icon, and the API
        answers 404), and the one answer a step expects, `allowed_network_status` = (path, status)."""
        first = text.split(" ", 1)[0]
        path = urlsplit(first).path if "://" in first else ""
        if path == "/favicon.ico" and "status of 404" in text:
            return True
        return allowed_network_status is not None and path == allowed_network_status[0] \
            and f"status of {allowed_network_status[1]}" in text

    def check_console(self, allowed_network_status=None):
        """Fails on any SEVERE console entry (bar expected_network_error) or CSP violation."""
        problems = []
        for entry in self.driver.get_log("browser"):
            text = entry.get("message", "")
            if "Content Security Policy" in text or "Refused to" in text:
                problems.append(f"CSP violation: {text}")
            elif entry.get("level") == "SEVERE":
                if entry.get("source") == "network" and self.expected_network_error(text, allowed_network_status):
                    continue
                problems.append(f"SEVERE console entry: {text}")
        violations = self.driver.execute_script("return window.__cspViolations || []")
        problems += [f"CSP violation: {v}" for v in violations]
        if problems:
            raise Failure("; ".join(problems))


def fill_passwords(browser, password, confirmation):
    for id, value in (("new-password", password), ("confirm-password", confirmation)):
        field = browser.element(id)
        field.clear()
        field.send_keys(value)
    browser.element("reset-submit").click()


def run(browser, args):
    step(f"open the reset link on a phone-sized window ({PHONE[0]}x{PHONE[1]})")
    browser.open(args.reset_link, PHONE)
    browser.wait("the reset form", lambda: browser.element("reset-form").is_displayed())
    browser.check_fragment_gone()
    browser.screenshot("reset-form.png")
    browser.check_console()

    step("mismatched confirmation is refused in the page")
    fill_passwords(browser, args.new_password, args.new_password + "x")
    browser.wait_for_text("confirm-password-error", TEXT_MISMATCH)
    browser.screenshot("reset-mismatch.png")
    browser.check_console()

    step("a too-short password is refused in the page")
    fill_passwords(browser, TOO_SHORT_PASSWORD, TOO_SHORT_PASSWORD)
    browser.wait_for_text("new-password-error", TEXT_TOO_SHORT)
    browser.screenshot("reset-too-short.png")
    if browser.api_responses(CONFIRM_PATH):
        raise Failure("the page sent the invalid passwords to the API instead of refusing them itself")
    browser.check_console()

    step("the real password is accepted")
    fill_passwords(browser, args.new_password, args.new_password)
    browser.wait_for_text("message", TEXT_RESET_DONE)
    if browser.element("reset-form").is_displayed():
        raise Failure("the reset form is still shown after success")
    browser.screenshot("reset-done.png")
    browser.check_console()

    step("the reset page without a token says the link is incomplete")
    scheme, netloc, path, query, _ = urlsplit(args.reset_link)
    browser.open(urlunsplit((scheme, netloc, path, query, "")), PHONE)
    browser.wait_for_text("message", TEXT_NO_TOKEN)
    browser.wait("the form to request a new link", lambda: browser.element("request-form").is_displayed())
    browser.screenshot("reset-no-token.png")
    browser.check_console()

    step(f"open the verify link on a laptop-sized window ({LAPTOP[0]}x{LAPTOP[1]})")
    browser.open(args.verify_link, LAPTOP)
    browser.wait_for_text("message", TEXT_VERIFIED.format(email=args.expect_email))
    browser.check_fragment_gone()
    browser.screenshot("verify-done.png")
    browser.check_console()

    if args.invalid_reset_link:
        step("an already-used reset link shows the API's detail")
        browser.open(args.invalid_reset_link, LAPTOP)
        browser.wait("the reset form", lambda: browser.element("reset-form").is_displayed())
        browser.check_fragment_gone()
        fill_passwords(browser, args.new_password, args.new_password)
        browser.wait("the request-a-new-link form", lambda: browser.element("request-form").is_displayed())
        answers = browser.api_responses(CONFIRM_PATH)
        if [status for _, status in answers] != [422]:
            raise Failure(f"expected one 422 answer to {CONFIRM_PATH}, got {[status for _, status in answers]}")
        body = browser.driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": answers[0][0]})["body"]
        problem = json.loads(body)
        if problem.get("code") != "invalid_reset_token":
            raise Failure(f"expected code invalid_reset_token, got {problem.get('code')!r}")
        browser.wait_for_text("message", problem["detail"])
        print(f"  detail shown: {problem['detail']!r}", flush=True)
        browser.screenshot("reset-invalid.png")
        browser.check_console(allowed_network_status=(CONFIRM_PATH, 422))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reset-link", required=True, help="mailed <public-url>/reset-password#token=…")
    parser.add_argument("--new-password", required=True, help="password to set (at least 8 characters)")
    parser.add_argument("--verify-link", required=True, help="mailed <public-url>/verify-email#token=…")
    parser.add_argument("--expect-email", required=True, help="address the verify page must name")
    parser.add_argument("--screenshots", required=True, help="directory for the PNG screenshots")
    parser.add_argument("--invalid-reset-link", help="an already-used reset link")
    parser.add_argument("--timeout", type=float, default=20, help="seconds per wait (default 20)")
    args = parser.parse_args()
    if len(args.new_password) < 8:
        parser.error("--new-password must have at least 8 characters")
    os.makedirs(args.screenshots, exist_ok=True)

    try:
        browser = Browser(args.timeout, args.screenshots)
    except WebDriverException as error:
        print(f"FAIL: could not start headless Chromium: {error.msg}", flush=True)
        return 1
    try:
        run(browser, args)
    except (Failure, TimeoutException, WebDriverException) as error:
        reason = error.msg if isinstance(error, WebDriverException) and error.msg else str(error)
        try:
            browser.screenshot("failure.png")  # the page as it was when the step failed
        except (Failure, WebDriverException):
            pass
        print(f"FAIL: {reason}", flush=True)
        return 1
    finally:
        browser.quit()
    print("OK: recovery pages behave", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
