"use strict";

// Finishes a password reset from the mailed link <public-url>/reset-password#token=…
// The token travels in the URL fragment so it never reaches a server log or a Referer. It is read
// once, removed from the address bar and kept in this variable only: never in storage or a cookie.
const token = readToken();

// A new link pasted into this tab changes only the fragment, which loads nothing: start over with it.
addEventListener("hashchange", () => {
  if (new URLSearchParams(location.hash.slice(1)).has("token")) location.reload();
});

const MIN_LENGTH = 8; // the server's rule too (Unicode scalars); it checks again
const NETWORK_ERROR = "The server could not be reached. Check your connection and try again.";

const message = document.getElementById("message");
const resetForm = document.getElementById("reset-form");
const passwordInput = document.getElementById("new-password");
const passwordError = document.getElementById("new-password-error");
const confirmInput = document.getElementById("confirm-password");
const confirmError = document.getElementById("confirm-password-error");
const showPasswords = document.getElementById("show-passwords");
const resetSubmit = document.getElementById("reset-submit");
const requestForm = document.getElementById("request-form");
const emailInput = document.getElementById("email");
const requestSubmit = document.getElementById("request-submit");
const mfaForm = document.getElementById("mfa-form");
const mfaInput = document.getElementById("mfa-code");
const mfaSubmit = document.getElementById("mfa-submit");
// The token of the second step, when the account's second factor is on (kept here only).
let mfaToken = null;

if (token) {
  resetForm.hidden = false;
  passwordInput.focus();
} else {
  showMessage(["This link is incomplete. Open the link from the email again, or ask for a new one below."], "error");
  requestForm.hidden = false; // offer a new link
}

showPasswords.addEventListener("change", () => {
  const type = showPasswords.checked ? "text" : "password";
  passwordInput.type = type;
  confirmInput.type = type;
});

resetForm.addEventListener("submit", async (event) => {
  event.preventDefault(); // the CSP has form-action 'none': the page itself never navigates
  if (resetSubmit.disabled || !validatePasswords()) return;
  resetSubmit.disabled = true;
  showMessage(["Changing your password…"]);
  try {
    const response = await postJSON("/users/password-reset/confirm", {token, newPassword: passwordInput.value});
    if (response.ok) {
      passwordInput.value = "";
      confirmInput.value = "";
      resetForm.hidden = true;
      showMessage(["Your password has been changed. You can now sign in with it in the app."], "success", true);
      // The 200 body is a new session, which this page does not keep, and the ways in that remain.
      let result = null;
      try {
        result = await response.json();
      } catch {
        // changed all the same; the list is only shown when the body names it
      }
      showWaysIn(result && result.signInMethods);
      return;
    }
    const problem = await problemOf(response);
    if (problem.code === "mfa_required" && typeof problem.mfaToken === "string") {
      // Nothing changed yet: the reset applies with the second factor's code.
      mfaToken = problem.mfaToken;
      passwordInput.value = "";
      confirmInput.value = "";
      resetForm.hidden = true;
      mfaForm.hidden = false;
      showMessage(["One more step: your account has two-step verification."]);
      mfaInput.focus();
      return;
    }
    if (problem.code === "invalid_reset_token") {
      // Used, expired or superseded: no password will make this link work, so offer a new one.
      passwordInput.value = "";
      confirmInput.value = "";
      resetForm.hidden = true;
      showMessage([problem.detail], "error", true);
      requestForm.hidden = false; // offer a new link
      return;
    }
    const fieldDetail = problem.errors.find((e) => e.field === "newPassword" && typeof e.detail === "string");
    showMessage([problem.detail], "error", !fieldDetail);
    if (fieldDetail) setFieldError(passwordInput, passwordError, fieldDetail.detail);
  } catch {
    showMessage([NETWORK_ERROR], "error", true);
  } finally {
    resetSubmit.disabled = false;
  }
});

requestForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (requestSubmit.disabled) return;
  const email = emailInput.value.trim();
  if (!email) {
    showMessage(["Enter the email address of your account."], "error");
    emailInput.focus();
    return;
  }
  requestSubmit.disabled = true;
  showMessage(["Sending a new link…"]);
  try {
    const response = await postJSON("/users/password-reset", {email});
    if (response.ok) {
      // The API answers alike whether or not the address has an account, and so does this text.
      requestForm.hidden = true;
      showMessage(["If ", strong(email), " belongs to an account, a new link is on its way to it. Open the newest email."], "success", true);
    } else {
      showMessage([(await problemOf(response)).detail], "error", true);
    }
  } catch {
    showMessage([NETWORK_ERROR], "error", true);
  } finally {
    requestSubmit.disabled = false;
  }
});

// Client-side checks spare a round trip; on failure the field is marked, described and focused.
function validatePasswords() {
  clearFieldError(passwordInput, passwordError);
  clearFieldError(confirmInput, confirmError);
  if ([...passwordInput.value].length < MIN_LENGTH) {
    setFieldError(passwordInput, passwordError, `Use at least ${MIN_LENGTH} characters.`);
    return false;
  }
  if (confirmInput.value !== passwordInput.value) {
    setFieldError(confirmInput, confirmError, "The two passwords do not match.");
    return false;
  }
  return true;
}

function setFieldError(input, element, text) {
  element.textContent = text;
  element.hidden = false;
  input.setAttribute("aria-invalid", "true");
  input.focus();
}

function clearFieldError(input, element) {
  element.textContent = "";
  element.hidden = true;
  input.removeAttribute("aria-invalid");
}

// Lists the ways in the reset left (`signInMethods`), each as text (never as markup).
function showWaysIn(methods) {
  if (!methods || typeof methods !== "object") return;
  const items = [];
  if (methods.password === true) items.push("Your password");
  const providers = {apple: "Sign in with Apple", google: "Sign in with Google"};
  for (const identity of Array.isArray(methods.identities) ? methods.identities : []) {
    const name = providers[identity && identity.provider] || "An identity";
    items.push(identity && typeof identity.email === "string" ? `${name} (${identity.email})` : name);
  }
  for (const passkey of Array.isArray(methods.passkeys) ? methods.passkeys : []) {
    items.push(passkey && typeof passkey.name === "string" ? `A passkey: ${passkey.name}` : "A passkey");
  }
  if (methods.mfa && methods.mfa.totp && methods.mfa.totp.enabled === true) {
    items.push("Two-step verification: an authenticator app's codes");
  }
  const list = document.getElementById("ways-in-list");
  list.replaceChildren(...items.map((text) => {
    const item = document.createElement("li");
    item.textContent = text;
    return item;
  }));
  document.getElementById("ways-in").hidden = items.length === 0;
}

mfaForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const code = mfaInput.value.trim();
  if (mfaSubmit.disabled || !mfaToken || !code) return;
  mfaSubmit.disabled = true;
  showMessage(["Checking the code…"]);
  try {
    const response = await postJSON("/users/signin/mfa", {mfaToken, code});
    if (response.ok) {
      mfaInput.value = "";
      mfaForm.hidden = true;
      showMessage(["Your password has been changed. You can now sign in with it in the app."], "success", true);
      // The answer is a session, used once here to read the ways in that remain, then dropped.
      let session = null;
      try {
        session = await response.json();
      } catch {
        return;
      }
      if (!session || typeof session.accessToken !== "string") return;
      const methods = await fetch("/users/me/sign-in-methods", {
        headers: {"Authorization": "Bearer " + session.accessToken, "Accept": "application/json"},
        credentials: "omit", cache: "no-store",
      });
      if (methods.ok) showWaysIn(await methods.json());
      return;
    }
    const problem = await problemOf(response);
    if (problem.code === "invalid_mfa_token") {
      // Five wrong codes, or too late: the link was used; a new one starts over.
      mfaToken = null;
      mfaForm.hidden = true;
      requestForm.hidden = false;
    }
    showMessage([problem.detail], "error", true);
  } catch {
    showMessage([NETWORK_ERROR], "error", true);
  } finally {
    mfaSubmit.disabled = false;
  }
});
