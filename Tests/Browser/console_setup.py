#!/usr/bin/python3
"""Follows the console's one-time setup link in headless Chromium.

Run with Debian's /usr/bin/python3 (python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Browser/console_setup.py --link http://127.0.0.1:PORT/console/#setup=TOKEN \
        --email E --password P --screenshots DIR

The server has no administrator and printed LINK at start. The script opens the link, checks that
the token left the address bar, creates the first administrator E with the keyboard, waits for the
dashboard, signs out, then opens the same link again and checks that it is refused with the API's
detail and leads to the sign-in form. Exits non-zero with a FAIL line on a wrong page state, a
timeout, any SEVERE browser console entry (a missing icon included) or any CSP violation.
"""

import argparse
import sys

from harness import LAPTOP, Failure, Keys, drive, step


def run(browser, args):
    step("the link opens the setup form, and the token leaves the address bar")
    browser.open(args.link, LAPTOP)
    browser.wait("the setup form", lambda: browser.element("setup-form").is_displayed())
    if "setup=" in browser.driver.current_url:
        raise Failure(f"the setup token is still in the address bar: {browser.driver.current_url}")
    if browser.element("top").is_displayed():
        raise Failure("the navigation shows before there is an administrator")
    active = browser.driver.switch_to.active_element
    if active.get_attribute("id") != "setup-email":
        raise Failure(f"the email field should have focus, not #{active.get_attribute('id')}")
    browser.screenshot("setup.png")
    browser.check_console()

    step("a weak password is refused with the policy's detail, and the form stays")
    active.send_keys(args.email, Keys.TAB, "short", Keys.ENTER)
    browser.wait("the refusal", lambda: browser.element("message").is_displayed())
    if not browser.element("setup-form").is_displayed():
        raise Failure("a refused password left the setup form")
    browser.check_console(allowed_network_status=("/admin/setup", 422))

    step("the first administrator is created and signed in")
    password = browser.element("setup-password")
    password.clear()
    password.send_keys(args.password, Keys.ENTER)
    browser.wait("the dashboard", lambda: browser.element("page-dashboard").is_displayed())
    browser.wait_for_text("message", "You are the first administrator")
    browser.wait_for_text("who", args.email)
    stored = browser.driver.execute_script("return sessionStorage.getItem('exosphere.console.session')")
    if not stored or browser.driver.get_cookies():
        raise Failure("the admin session should be in sessionStorage, and no cookie set")
    browser.screenshot("setup-done.png")
    browser.check_console()

    step("sign out; the same link is spent and leads to the sign-in")
    browser.element("sign-out").click()
    browser.wait_for_text("message", "You are signed out.")
    browser.open(args.link, LAPTOP)
    browser.wait("the setup form", lambda: browser.element("setup-form").is_displayed())
    browser.element("setup-email").send_keys("someone.else@example.com", Keys.TAB, args.password, Keys.ENTER)
    browser.wait("the sign-in form", lambda: browser.element("signin-form").is_displayed())
    browser.wait_for_text("message", "The setup link is unknown, used or expired")
    browser.screenshot("setup-spent.png")
    browser.check_console(allowed_network_status=("/admin/setup", 401))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--link", required=True, help="the setup link serve printed")
    parser.add_argument("--email", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--screenshots", required=True, help="directory for the PNG screenshots")
    parser.add_argument("--timeout", type=float, default=20, help="seconds per wait (default 20)")
    args = parser.parse_args()
    return drive(args, run, "the setup link made the first administrator")


if __name__ == "__main__":
    sys.exit(main())
