#!/usr/bin/python3
"""Drives the account-recovery pages (/reset-password, /verify-email, /undo-email-change,
/remove-sign-in-method) in headless Chromium.

Run with Debian's /usr/bin/python3 (python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Browser/recovery_pages.py --screenshots DIR \
        [--reset-link URL --new-password PW --verify-link URL --expect-email EMAIL] \
        [--invalid-reset-link URL] [--undo-link URL --expect-restored EMAIL] [--remove-link URL]

The links are the real ones the server mailed. Prints one line per step, saves a PNG of each page
state in DIR and exits non-zero with a FAIL line on a wrong page state, a timeout, any SEVERE
browser console entry or any Content-Security-Policy violation.
"""

import argparse
import json
import sys
from urllib.parse import urlsplit, urlunsplit

from harness import LAPTOP, PHONE, Failure, drive, step

# The texts the pages show (Sources/App/API/Resources/pages/*.js).
TEXT_MISMATCH = "The two passwords do not match."
TEXT_TOO_SHORT = "Use at least 8 characters."
TEXT_RESET_DONE = "Your password has been changed. You can now sign in with it in the app."
TEXT_VERIFIED = "Your email address {email} is verified."
TEXT_NO_TOKEN = "This link is incomplete."
TEXT_RESTORED = "Your address {email} is back."
TEXT_REMOVED = "It was removed, and every device was signed out."
TOO_SHORT_PASSWORD = "short12"  # 7 characters: one under the minimum

CONFIRM_PATH = "/users/password-reset/confirm"
UNDO_PATH = "/users/email-change/undo"
REMOVE_PATH = "/users/sign-in-methods/remove"
MFA_PATH = "/users/signin/mfa"


def fill_passwords(browser, password, confirmation):
    for id, value in (("new-password", password), ("confirm-password", confirmation)):
        field = browser.element(id)
        field.clear()
        field.send_keys(value)
    browser.element("reset-submit").click()


def run(browser, args):
    if args.reset_link:
        reset_and_verify(browser, args)
    if args.undo_link:
        undo_email_change(browser, args)
    if args.remove_link:
        remove_sign_in_method(browser, args)
    if args.mfa_reset_link:
        reset_with_second_factor(browser, args)


def reset_with_second_factor(browser, args):
    step("a reset of an account with two-step verification asks for the code before anything changes")
    browser.open(args.mfa_reset_link, PHONE)
    browser.wait("the reset form", lambda: browser.element("reset-form").is_displayed())
    fill_passwords(browser, args.mfa_new_password, args.mfa_new_password)
    browser.wait("the code form", lambda: browser.element("mfa-form").is_displayed())
    answers = browser.api_responses(CONFIRM_PATH)
    if [status for _, status in answers] != [401]:
        raise Failure(f"expected one 401 mfa_required from {CONFIRM_PATH}, got {[status for _, status in answers]}")
    browser.screenshot("reset-mfa-code.png")
    browser.check_console(allowed_network_status=(CONFIRM_PATH, 401))

    step("the authenticator's code finishes the reset, and the ways in are listed")
    field = browser.element("mfa-code")
    field.clear()
    field.send_keys(args.mfa_code)
    browser.element("mfa-submit").click()
    browser.wait_for_text("message", TEXT_RESET_DONE)
    browser.wait("the list of ways in", lambda: browser.element("ways-in").is_displayed())
    listed = [item.text for item in browser.element("ways-in-list").find_elements("tag name", "li")]
    if "Two-step verification: an authenticator app's codes" not in listed:
        raise Failure(f"the list of ways in does not name the second factor: {listed}")
    if [status for _, status in browser.api_responses(MFA_PATH)] != [200]:
        raise Failure(f"expected one 200 answer to {MFA_PATH}")
    browser.screenshot("reset-mfa-done.png")
    browser.check_console(allowed_network_status=(CONFIRM_PATH, 401))


def reset_and_verify(browser, args):
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

    step("the real password is accepted, and the ways in that remain are listed")
    fill_passwords(browser, args.new_password, args.new_password)
    browser.wait_for_text("message", TEXT_RESET_DONE)
    if browser.element("reset-form").is_displayed():
        raise Failure("the reset form is still shown after success")
    browser.wait("the list of ways in", lambda: browser.element("ways-in").is_displayed())
    listed = [item.text for item in browser.element("ways-in-list").find_elements("tag name", "li")]
    if listed != args.expect_ways_in:
        raise Failure(f"expected the ways in {args.expect_ways_in}, the page lists {listed}")
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


def undo_email_change(browser, args):
    confirm_link(browser, args.undo_link, "undo", UNDO_PATH, "invalid_undo_token", "undo",
                 "the old address is back", TEXT_RESTORED.format(email=args.expect_restored))


def remove_sign_in_method(browser, args):
    confirm_link(browser, args.remove_link, "remove", REMOVE_PATH, "invalid_token", "remove",
                 "the way in is gone and every device signed out", TEXT_REMOVED)


def confirm_link(browser, link, button, path, invalid_code, shots, outcome, done_text):
    """A page that acts on its link once its button is pressed: nothing before, the outcome
    after, and the API's detail (and no button) for the used link."""
    step(f"open the {shots} link on a phone-sized window: nothing happens until the button is pressed")
    browser.open(link, PHONE)
    browser.wait(f"the {button} button", lambda: browser.element(button).is_displayed())
    browser.check_fragment_gone()
    if browser.api_responses(path):
        raise Failure(f"the page posted to {path} on opening, before the button was pressed")
    browser.screenshot(f"{shots}-confirm.png")
    browser.check_console()

    step(f"press the button: {outcome}")
    browser.element(button).click()
    browser.wait_for_text("message", done_text)
    if browser.element(button).is_displayed():
        raise Failure(f"the {button} button is still shown after success")
    if [status for _, status in browser.api_responses(path)] != [200]:
        raise Failure(f"expected one 200 answer to {path}")
    browser.screenshot(f"{shots}-done.png")
    browser.check_console()

    step("the used link again shows the API's detail and no button")
    browser.open(link, PHONE)
    browser.wait(f"the {button} button", lambda: browser.element(button).is_displayed())
    browser.element(button).click()
    browser.wait("the button to go", lambda: not browser.element(button).is_displayed())
    answers = browser.api_responses(path)
    if [status for _, status in answers] != [422]:
        raise Failure(f"expected one 422 answer to {path}, got {[status for _, status in answers]}")
    problem = json.loads(browser.driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": answers[0][0]})["body"])
    if problem.get("code") != invalid_code:
        raise Failure(f"expected code {invalid_code}, got {problem.get('code')!r}")
    browser.wait_for_text("message", problem["detail"])
    browser.screenshot(f"{shots}-invalid.png")
    browser.check_console(allowed_network_status=(path, 422))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reset-link", help="mailed <public-url>/reset-password#token=…")
    parser.add_argument("--new-password", help="password to set (at least 8 characters)")
    parser.add_argument("--verify-link", help="mailed <public-url>/verify-email#token=…")
    parser.add_argument("--expect-email", help="address the verify page must name")
    parser.add_argument("--expect-ways-in", action="append", default=[], help="a way in the reset page must list, in order")
    parser.add_argument("--screenshots", required=True, help="directory for the PNG screenshots")
    parser.add_argument("--invalid-reset-link", help="an already-used reset link")
    parser.add_argument("--undo-link", help="mailed <public-url>/undo-email-change#token=…")
    parser.add_argument("--expect-restored", help="the address the undo page must say is back")
    parser.add_argument("--remove-link", help="mailed <public-url>/remove-sign-in-method#token=…")
    parser.add_argument("--mfa-reset-link", help="a reset link of an account whose second factor is on")
    parser.add_argument("--mfa-new-password", help="the password that reset sets")
    parser.add_argument("--mfa-code", help="the authenticator's current code for that account")
    parser.add_argument("--timeout", type=float, default=20, help="seconds per wait (default 20)")
    args = parser.parse_args()
    if args.reset_link and not (args.new_password and args.verify_link and args.expect_email):
        parser.error("--reset-link needs --new-password, --verify-link and --expect-email")
    if args.reset_link and len(args.new_password) < 8:
        parser.error("--new-password must have at least 8 characters")
    if args.undo_link and not args.expect_restored:
        parser.error("--undo-link needs --expect-restored")
    return drive(args, run, "recovery pages behave")


if __name__ == "__main__":
    sys.exit(main())
