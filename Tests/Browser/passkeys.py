#!/usr/bin/python3
"""Passkeys end to end in headless Chromium with its virtual authenticator (the DevTools
`WebAuthn` domain): a real browser makes the credential and the assertions, the real server judges.

Run with Debian's /usr/bin/python3 (python3-selenium, chromium, chromium-driver):

    /usr/bin/python3 Tests/Browser/passkeys.py --url http://localhost:PORT --token T \
        --expect-email E --screenshots DIR

The server's RP id is `localhost` and its origin URL; T is a session of the user E. The test
page is a page of the server's own origin (`/healthz`), into which the script puts the ceremony:
it fetches the options from the API, hands them to `navigator.credentials` as a page would
(`parseCreationOptionsFromJSON`, `toJSON`), and posts the result. Refusals it checks: a
registration whose client data names another origin, a registration replayed, a sign-in replayed,
a sign-in from another origin, an assertion whose counter went back (made, held, and posted after a
later one), an assertion without user verification, and a reauthentication (`POST
/users/me/reauthenticate {passkey}`) replayed. Prints one line per step; the last is
`OK: passkeys behave` or a FAIL line (exit status 1).
"""

import argparse
import sys

from harness import LAPTOP, Failure, drive, step

# Runs in the page: `ceremony` is "create" or "get"; `tamper` names a change made to the result
# before it is posted (or "hold": not posted, returned). Resolves to {status, body, credential}.
CEREMONY = """
const [ceremony, token, tamper, done] = [arguments[0], arguments[1], arguments[2], arguments[arguments.length - 1]];
const headers = {"Content-Type": "application/json"};
if (token) headers["Authorization"] = "Bearer " + token;
const base64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
const unbase64url = (text) => Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
(async () => {
  const optionsPath = ceremony === "create" ? "/users/me/passkeys/registration/options" : "/users/signin/passkey/options";
  const optionsResponse = await fetch(optionsPath, {method: "POST", headers});
  if (optionsResponse.status !== 200) return {status: optionsResponse.status, body: await optionsResponse.text(), step: "options"};
  const options = await optionsResponse.json();
  if (tamper === "no-exclusions") options.excludeCredentials = [];
  if (tamper === "no-user-verification") options.userVerification = "discouraged";
  let credential;
  try {
    credential = ceremony === "create"
      ? await navigator.credentials.create({publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options)})
      : await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options)});
  } catch (error) {
    return {status: 0, body: "the browser refused: " + error.name + ": " + error.message, step: "ceremony"};
  }
  const json = credential.toJSON();
  if (tamper === "origin") {
    const clientData = JSON.parse(new TextDecoder().decode(unbase64url(json.response.clientDataJSON)));
    clientData.origin = "http://evil.localhost:1";
    json.response.clientDataJSON = base64url(new TextEncoder().encode(JSON.stringify(clientData)));
  }
  if (ceremony === "create") json.name = "Headless laptop";
  if (tamper === "hold") return {status: -1, body: "", credential: json};
  const path = {create: "/users/me/passkeys/registration", get: "/users/signin/passkey", reauth: "/users/me/reauthenticate"}[ceremony];
  const body = ceremony === "reauth" ? {passkey: json} : json;
  const response = await fetch(path, {method: "POST", headers, body: JSON.stringify(body)});
  return {status: response.status, body: await response.text(), credential: json};
})().then(done, (error) => done({status: 0, body: "script error: " + error, step: "script"}));
"""

POST = """
const [path, body, token, done] = [arguments[0], arguments[1], arguments[2], arguments[arguments.length - 1]];
const headers = {"Content-Type": "application/json"};
if (token) headers["Authorization"] = "Bearer " + token;
fetch(path, {method: "POST", headers, body: JSON.stringify(body)})
  .then(async (response) => done({status: response.status, body: await response.text()}), (error) => done({status: 0, body: String(error)}));
"""


def ceremony(browser, kind, token=None, tamper=None):
    return browser.driver.execute_async_script(CEREMONY, kind, token, tamper)


def expect(result, status, code=None, what=""):
    if result["status"] != status or (code is not None and f'"code":"{code}"' not in result["body"]):
        raise Failure(f"{what}: expected {status} {code or ''}, got {result['status']} at {result.get('step', 'the post')}: {result['body'][:300]}")
    print(f"  {what}: {status}", flush=True)


def repost(browser, path, credential, token=None):
    """Posts a ceremony's result again, as a replaying client would."""
    return browser.driver.execute_async_script(POST, path, credential, token)


def run(browser, args):
    browser.driver.set_script_timeout(args.timeout)
    step("a page of the server's origin, with a virtual platform authenticator (user verification, resident keys)")
    browser.open(args.url + "/healthz", LAPTOP)
    browser.driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
    authenticator = browser.driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "ctap2Version": "ctap2_1", "transport": "internal", "hasResidentKey": True,
        "hasUserVerification": True, "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]

    step("a registration whose client data names another origin is refused")
    expect(ceremony(browser, "create", args.token, "origin"), 422, "invalid_passkey", "another origin")
    # That credential exists in the authenticator but not on the server: start from a clean one.
    browser.driver.execute_cdp_cmd("WebAuthn.clearCredentials", {"authenticatorId": authenticator})

    step("the signed-in user registers a passkey")
    registered = ceremony(browser, "create", args.token)
    expect(registered, 201, None, "registration")
    if '"name":"Headless laptop"' not in registered["body"]:
        raise Failure(f"the passkey's name is not the one given: {registered['body']}")
    expect(repost(browser, "/users/me/passkeys/registration", registered["credential"], args.token),
           422, "invalid_passkey", "the same registration replayed")

    step("anyone signs in with the discoverable passkey, and gets the user's session")
    signed_in = ceremony(browser, "get")
    expect(signed_in, 200, None, "sign-in")
    if f'"email":"{args.expect_email}"' not in signed_in["body"] or '"accessToken"' not in signed_in["body"]:
        raise Failure(f"the sign-in's body is not the user's session: {signed_in['body'][:300]}")
    expect(repost(browser, "/users/signin/passkey", signed_in["credential"]), 401, "invalid_credentials", "the same assertion replayed")

    step("a sign-in whose client data names another origin is refused")
    expect(ceremony(browser, "get", None, "origin"), 401, "invalid_credentials", "another origin")

    step("an assertion whose counter went back is refused")
    held = ceremony(browser, "get", None, "hold")
    if held["status"] != -1:
        raise Failure(f"the held assertion was not made: {held['body'][:300]}")
    expect(ceremony(browser, "get"), 200, None, "a later assertion")
    expect(repost(browser, "/users/signin/passkey", held["credential"]), 401, "invalid_credentials", "the earlier assertion after it")

    step("an assertion without user verification is refused")
    browser.driver.execute_cdp_cmd("WebAuthn.setUserVerified", {"authenticatorId": authenticator, "isUserVerified": False})
    expect(ceremony(browser, "get", None, "no-user-verification"), 401, "invalid_credentials", "the user not verified")
    browser.driver.execute_cdp_cmd("WebAuthn.setUserVerified", {"authenticatorId": authenticator, "isUserVerified": True})

    step("and the passkey still signs in")
    expect(ceremony(browser, "get"), 200, None, "sign-in again")

    step("the signed-in user proves the passkey again: a reauthentication, once per assertion")
    proved = ceremony(browser, "reauth", args.token)
    expect(proved, 200, None, "reauthentication")
    if '"authenticatedAt"' not in proved["body"]:
        raise Failure(f"the reauthentication's body has no authenticatedAt: {proved['body'][:300]}")
    expect(repost(browser, "/users/me/reauthenticate", {"passkey": proved["credential"]}, args.token),
           422, "invalid_credentials", "the same reauthentication replayed")
    browser.screenshot("passkeys.png")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--expect-email", required=True)
    parser.add_argument("--screenshots", required=True)
    parser.add_argument("--timeout", type=float, default=30)
    return drive(parser.parse_args(), run, "passkeys behave")


if __name__ == "__main__":
    sys.exit(main())
