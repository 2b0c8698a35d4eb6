#!/usr/bin/python3
"""Drives the administrators' console (/console/) in headless Chromium.

Run with Debian's /usr/bin/python3 (python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Browser/console.py --url http://127.0.0.1:PORT --admin-email E \
        --admin-password P --user-email U --user-token T --filter-field NAME --filter-value V \
        --expect-filtered EMAIL[,EMAIL…] --expect-grid WxH[,WxH…] --screenshots DIR

The server holds an administrator, the user U (signed in with token T, with a `dateOfBirth` date
field and at least one image) and users whose field NAME is V. The script signs in with the
keyboard, reads the dashboard, searches users by email and by the custom field, edits the user's
date of birth, opens the image grid, disables the user and checks that T is refused, shows a
refused schema change's detail, reads the audit log, turns the user's second factor off, turns on
its own (the QR code, a code computed here from the key, the recovery codes), and signs in again
with one of them. Prints one line per step, saves a PNG of
each page in DIR and exits non-zero with a FAIL line on a wrong page state, a timeout, any SEVERE
browser console entry or any Content-Security-Policy violation.
"""

import argparse
import base64
import hashlib
import hmac
import struct
import sys
import time
import urllib.error
import urllib.request

from harness import LAPTOP, PHONE, By, Failure, Keys, drive, step
from selenium.webdriver.support.ui import Select

NEW_DATE = "1994-05-17"


def table_text(browser, table_id):
    """The rows' texts, read in one script: the page may replace the rows while they are read."""
    return browser.driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((row) => row.innerText.replaceAll('\\t', ' '))",
        f"#{table_id} tbody tr")


def rows(browser, table_id):
    return table_text(browser, table_id)


def totp(secret):
    """The authenticator's current code for a base32 secret (RFC 6238), as an app computes it."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    mac = hmac.new(key, struct.pack(">Q", int(time.time() // 30)), hashlib.sha1).digest()
    offset = mac[19] & 15
    return "%06d" % ((int.from_bytes(mac[offset:offset + 4], "big") & 0x7FFFFFFF) % 1000000)


def wait_for_message(browser, text):
    browser.wait_for_text("message", text)


def user_status(url, token):
    request = urllib.request.Request(url + "/users/me", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def run(browser, args):
    console = args.url + "/console/"

    step(f"the sign-in page on a phone-sized window ({PHONE[0]}x{PHONE[1]}); a wrong password shows the API's detail")
    browser.open(console, PHONE)
    browser.wait("the sign-in form", lambda: browser.element("signin-form").is_displayed())
    # Keyboard only: the email field has focus; Tab to the password, Enter submits.
    active = browser.driver.switch_to.active_element
    if active.get_attribute("id") != "signin-email":
        raise Failure(f"the email field should have focus, not #{active.get_attribute('id')}")
    active.send_keys(args.admin_email, Keys.TAB, "not the password", Keys.ENTER)
    wait_for_message(browser, "The email or password is wrong.")
    browser.screenshot("signin-refused.png")
    browser.check_console(allowed_network_status=("/admin/signin", 401))
    if browser.driver.get_cookies():
        raise Failure(f"the console set cookies: {browser.driver.get_cookies()}")

    step("sign in with the keyboard")
    password = browser.element("signin-password")
    password.clear()
    password.send_keys(args.admin_password, Keys.ENTER)
    browser.wait("the dashboard", lambda: browser.element("page-dashboard").is_displayed())
    browser.wait("the chart", lambda: browser.driver.find_elements(By.CSS_SELECTOR, "#chart svg rect.signups"))
    token = browser.driver.execute_script("return sessionStorage.getItem('exosphere.console.session')")
    if not token or browser.driver.get_cookies():
        raise Failure("the admin session should be in sessionStorage, and no cookie set")
    browser.screenshot("dashboard-phone.png")
    browser.driver.set_window_size(*LAPTOP)
    bars = browser.driver.find_elements(By.CSS_SELECTOR, "#chart svg rect.signups")
    if len(bars) != 30:
        raise Failure(f"expected 30 days of bars, got {len(bars)}")
    counts = browser.element("counts").text
    if "Users" not in counts:
        raise Failure(f"the counts are missing: {counts!r}")
    if f"Guests\n{args.expect_guests}" not in counts:
        raise Failure(f"the dashboard should count {args.expect_guests} guests: {counts!r}")
    browser.screenshot("dashboard.png")
    browser.check_console()

    step("search users by email")
    browser.driver.find_element(By.ID, "nav-users").click()
    browser.wait("the users page", lambda: browser.element("page-users").is_displayed())
    query = args.user_email.split("@")[0]
    field = browser.element("search-q")
    field.clear()
    field.send_keys(query, Keys.ENTER)
    browser.wait(f"{args.user_email} alone in the results",
                 lambda: [r.split("\n")[0].split(" ")[0] for r in table_text(browser, "users-table")] == [args.user_email])
    browser.screenshot("users-search.png")
    browser.check_console()

    step("the guests alone")
    field = browser.element("search-q")
    field.clear()
    Select(browser.element("search-guest")).select_by_value("true")
    browser.element("search-submit").click()
    browser.wait(f"{args.expect_guests} guest rows",
                 lambda: [r.split("\n")[0].split(" ")[0] for r in table_text(browser, "users-table")] == ["Guest"] * args.expect_guests)
    if "guest=true" not in browser.driver.current_url:
        raise Failure(f"the filter should be in the address: {browser.driver.current_url}")
    browser.check_console()

    step(f"filter users by the custom field {args.filter_field} = {args.filter_value}")
    Select(browser.element("search-guest")).select_by_value("")
    field = browser.element("search-q")
    field.clear()
    field.send_keys(Keys.ENTER)
    browser.wait("the full list", lambda: len(rows(browser, "users-table")) > 1)
    select = browser.element("filter-field")
    for option in select.find_elements(By.TAG_NAME, "option"):
        if option.get_attribute("value") == args.filter_field:
            option.click()
    value = browser.element("filter-value")
    if value.tag_name == "select":
        for option in value.find_elements(By.TAG_NAME, "option"):
            if option.get_attribute("value") == args.filter_value:
                option.click()
    else:
        value.clear()
        value.send_keys(args.filter_value)
    browser.element("filter-add").click()
    expected = sorted(args.expect_filtered.split(","))
    browser.wait(f"the filtered users {expected}",
                 lambda: sorted(r.split(" ")[0].split("\n")[0] for r in table_text(browser, "users-table")) == expected)
    browser.screenshot("users-filter.png")
    browser.driver.set_window_size(*PHONE)
    browser.screenshot("users-filter-phone.png")
    browser.driver.set_window_size(*LAPTOP)
    browser.check_console()

    step("open the user; edit the date of birth in its date editor")
    browser.driver.get(console + "#/users?q=" + query)
    browser.wait("the user's row", lambda: len(rows(browser, "users-table")) == 1)
    browser.driver.find_element(By.LINK_TEXT, args.user_email).click()
    browser.wait("the user page", lambda: browser.element("page-user").is_displayed()
                 and browser.element("user-title").text == args.user_email)
    editor = browser.element("field-dateOfBirth")
    if editor.get_attribute("type") != "date":
        raise Failure(f"dateOfBirth should have a date editor, not {editor.get_attribute('type')!r}")
    editor.click()
    year, month, day = NEW_DATE.split("-")
    editor.send_keys(month + day + year)
    if editor.get_attribute("value") != NEW_DATE:
        raise Failure(f"the date editor holds {editor.get_attribute('value')!r} after typing {NEW_DATE}")
    browser.element("profile-save").click()
    wait_for_message(browser, "The profile is saved.")
    browser.driver.refresh()
    browser.wait("the saved date after a reload",
                 lambda: browser.element("page-user").is_displayed() and browser.element("field-dateOfBirth").get_attribute("value") == NEW_DATE)
    if args.expect_pending:
        pending = f"change to {args.expect_pending} pending"
        browser.wait(f"the status line to say '{pending}'", lambda: pending in browser.element("user-status").text)
    browser.screenshot("user.png")
    browser.check_console()

    step("the image grid shows the user's thumbnails")
    browser.wait("a loaded thumbnail", lambda: browser.driver.execute_script(
        "return [...document.querySelectorAll('#images-grid img')].some(i => i.complete && i.naturalWidth > 0)"))
    sizes = [e.text.split(" ")[0] for e in browser.driver.find_elements(By.CSS_SELECTOR, "#images-grid .meta")]
    if sizes != args.expect_grid.split(","):
        raise Failure(f"the grid should show the newest image first ({args.expect_grid}), not {sizes}")
    grid = browser.element("images-grid")
    browser.driver.execute_script("arguments[0].scrollIntoView()", grid)
    browser.screenshot("user-images.png")
    browser.driver.set_window_size(*PHONE)
    browser.driver.execute_script("window.scrollTo(0, 0)")
    browser.screenshot("user-phone.png")
    browser.driver.set_window_size(*LAPTOP)
    browser.check_console()

    step("the sign-in methods list the user's passkey and Apple identity; the passkey is removed")
    browser.wait("two sign-in methods", lambda: len(rows(browser, "methods-table")) == 2)
    methods = " | ".join(rows(browser, "methods-table"))
    if "Passkey Work laptop" not in methods or "Sign in with Apple" not in methods:
        raise Failure(f"the sign-in methods do not show the passkey and the identity: {methods}")
    remove = browser.driver.find_element(By.CSS_SELECTOR, "#methods-table button[aria-label^='Remove Passkey']")
    browser.driver.execute_script("arguments[0].scrollIntoView()", remove)
    remove.click()
    wait_for_message(browser, "The passkey was removed.")
    browser.wait("one sign-in method left", lambda: len(rows(browser, "methods-table")) == 1)
    browser.screenshot("user-sign-in-methods.png")
    browser.check_console()

    step("the user's two-step verification is on; the administrator turns it off")
    browser.wait("the user's second factor", lambda: "is on (10 recovery codes left)" in browser.element("user-mfa").text)
    reset = browser.element("user-mfa-reset")
    browser.driver.execute_script("arguments[0].scrollIntoView()", reset)
    reset.click()
    wait_for_message(browser, "two-step verification is off")
    browser.wait("the factor off", lambda: browser.element("user-mfa").text == "Two-step verification is off.")
    browser.screenshot("user-mfa-reset.png")
    browser.check_console()

    step("disable the user; their token is refused")
    if user_status(args.url, args.user_token) != 200:
        raise Failure("the user's token should work before the user is disabled")
    button = browser.element("user-disable")
    if button.text != "Disable user":
        raise Failure(f"the button reads {button.text!r}")
    button.click()
    wait_for_message(browser, "The user is disabled")
    browser.wait("the Enable button", lambda: browser.element("user-disable").text == "Enable user")
    status = user_status(args.url, args.user_token)
    if status != 401:
        raise Failure(f"the disabled user's token got {status}, not 401")
    browser.screenshot("user-disabled.png")
    browser.check_console()

    step("the schema; a type the stored values do not have shows the API's detail")
    browser.driver.find_element(By.ID, "nav-schema").click()
    browser.wait("the schema table", lambda: any(r.startswith("dateOfBirth") for r in table_text(browser, "schema-table")))
    name = browser.element("pin-name")
    name.send_keys("dateOfBirth")
    for option in browser.element("pin-type").find_elements(By.TAG_NAME, "option"):
        if option.get_attribute("value") == "boolean":
            option.click()
    browser.element("pin-submit").click()
    wait_for_message(browser, "not boolean")
    browser.screenshot("schema.png")
    browser.check_console(allowed_network_status=("/admin/schema/dateOfBirth", 409))

    step("the audit log names what was done")
    browser.driver.find_element(By.ID, "nav-audit").click()
    browser.wait("the audit entries", lambda: any("user.disable" in r for r in table_text(browser, "audit-table")))
    entries = "\n".join(table_text(browser, "audit-table"))
    # Every console page read is an entry too (stats.read, schema.read, …): the sign-in, the
    # first entry of this session, may be pages back. "Next" pages to it.
    for _ in range(10):
        if "admin.signin" in entries or not browser.element("audit-next").is_enabled():
            break
        shown = table_text(browser, "audit-table")
        browser.element("audit-next").click()
        browser.wait("the next audit page", lambda: table_text(browser, "audit-table") != shown)
        entries += "\n" + "\n".join(table_text(browser, "audit-table"))
    for action in ("user.update", "admin.signin", "stats.read", "user.read"):
        if action not in entries:
            raise Failure(f"{action} is not in the audit log: {entries}")
    browser.screenshot("audit.png")
    browser.check_console()

    step("the administrator turns on their own two-step verification with the app's code")
    browser.driver.find_element(By.ID, "nav-mfa").click()
    browser.wait("the enrolment button", lambda: browser.element("mfa-start").is_displayed())
    browser.element("mfa-start").click()
    browser.wait("the QR code", lambda: browser.element("mfa-enrol").is_displayed())
    if not browser.driver.find_elements(By.CSS_SELECTOR, "#mfa-qr svg path"):
        raise Failure("the enrolment shows no QR code")
    secret = browser.element("mfa-secret").text
    browser.element("mfa-code").send_keys(totp(secret) + Keys.ENTER)
    browser.wait("the recovery codes", lambda: len(browser.driver.find_elements(By.CSS_SELECTOR, "#mfa-codes-list li")) == 10)
    recovery = browser.driver.find_elements(By.CSS_SELECTOR, "#mfa-codes-list li")[0].text
    browser.screenshot("mfa-enrolled.png")
    browser.check_console()

    step("signed out and in again: the password, then a recovery code")
    browser.element("sign-out").click()
    wait_for_message(browser, "You are signed out.")
    browser.element("signin-email").send_keys(args.admin_email)
    browser.element("signin-password").send_keys(args.admin_password + Keys.ENTER)
    browser.wait("the code form", lambda: browser.element("signin-mfa-form").is_displayed())
    browser.element("signin-code").send_keys(recovery + Keys.ENTER)
    # Signed in where it was: the page of its second factor, which says it is on.
    browser.wait("the second factor's page", lambda: browser.element("page-mfa").is_displayed() and "is on" in browser.element("mfa-state").text)
    browser.screenshot("mfa-signed-in.png")
    browser.check_console(allowed_network_status=("/admin/signin", 401))

    step("sign out ends the session")
    browser.element("sign-out").click()
    wait_for_message(browser, "You are signed out.")
    if browser.driver.execute_script("return sessionStorage.getItem('exosphere.console.session')"):
        raise Failure("the session is still stored after signing out")
    browser.check_console()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server's origin, http://127.0.0.1:PORT")
    parser.add_argument("--admin-email", required=True)
    parser.add_argument("--admin-password", required=True)
    parser.add_argument("--user-email", required=True, help="a user with a dateOfBirth field and an image")
    parser.add_argument("--user-token", required=True, help="a live session token of that user")
    parser.add_argument("--expect-grid", required=True, help="the user's images' sizes, WxH, newest first, comma-separated")
    parser.add_argument("--filter-field", required=True)
    parser.add_argument("--filter-value", required=True)
    parser.add_argument("--expect-filtered", required=True, help="the emails the filter finds, comma-separated")
    parser.add_argument("--expect-guests", type=int, required=True, help="how many guests the dashboard counts and the filter lists")
    parser.add_argument("--expect-pending", help="the user's pending new address, which the user page must show")
    parser.add_argument("--screenshots", required=True, help="directory for the PNG screenshots")
    parser.add_argument("--timeout", type=float, default=20, help="seconds per wait (default 20)")
    args = parser.parse_args()
    return drive(args, run, "the console behaves")

if __name__ == "__main__":
    sys.exit(main())
