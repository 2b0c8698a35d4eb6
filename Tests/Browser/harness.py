"""What the browser tests share: headless Chromium under selenium, waits, screenshots, and the
check that fails a step on any SEVERE console entry or Content-Security-Policy violation."""

import json
import os
import sys
from urllib.parse import urlsplit

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as error:
    sys.exit(f"FAIL: selenium is not importable ({error}); run with /usr/bin/python3 and install python3-selenium")

PHONE = (390, 844)
LAPTOP = (1280, 800)

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
        options.add_argument("--lang=en-US")  # date inputs take keys in the US order, mm/dd/yyyy
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
        """Chromium logs every 4xx answer as a SEVERE "network" entry. These are not faults of the
        pages when a step expects them: `allowed_network_status` = (path, status) or a list of them
        (a path ending in / allows every path under it). Nothing else is, not even a missing icon."""
        first = text.split(" ", 1)[0]
        path = urlsplit(first).path if "://" in first else ""
        allowed = allowed_network_status if isinstance(allowed_network_status, list) else [allowed_network_status]
        return any(entry is not None and (path == entry[0] or (entry[0].endswith("/") and path.startswith(entry[0])))
                   and f"status of {entry[1]}" in text for entry in allowed)

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


def drive(args, run, done):
    """Starts the browser, runs `run(browser, args)`, and prints `OK: done` or the FAIL line (with
    a screenshot of the page as it was when the step failed); the process's exit status."""
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
            browser.screenshot("failure.png")
        except (Failure, WebDriverException):
            pass
        print(f"FAIL: {reason}", flush=True)
        print(f"FAIL: {reason}", file=sys.stderr, flush=True)  # what a test's error names
        return 1
    finally:
        browser.quit()
    print(f"OK: {done}", flush=True)
    return 0
