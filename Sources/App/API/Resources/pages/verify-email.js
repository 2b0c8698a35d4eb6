"use strict";

// Finishes an email verification from the mailed link <public-url>/verify-email#token=…
// The token travels in the URL fragment so it never reaches a server log or a Referer. It is read
// once, removed from the address bar and kept in this variable only: never in storage or a cookie.
const token = readToken();

// A new link pasted into this tab changes only the fragment, which loads nothing: start over with it.
addEventListener("hashchange", () => {
  if (new URLSearchParams(location.hash.slice(1)).has("token")) location.reload();
});

const NETWORK_ERROR = "The server could not be reached. Check your connection and try again.";

const message = document.getElementById("message");
const retry = document.getElementById("retry");

retry.addEventListener("click", verify);

if (token) {
  verify();
} else {
  showMessage(["This link is incomplete. Open the link from the email again."], "error", true);
}

async function verify() {
  if (!token || retry.disabled) return;
  retry.disabled = true; // one request at a time: the token works once
  showMessage(["Verifying your email address…"]);
  try {
    const response = await postJSON("/users/verify-email", {token});
    if (response.ok) {
      let user = null;
      try {
        user = await response.json();
      } catch {
        // verified all the same; the address is only shown when the body names it
      }
      retry.hidden = true;
      const email = user && typeof user.email === "string" ? user.email : null;
      showMessage(email ? ["Your email address ", strong(email), " is verified."] : ["Your email address is verified."], "success", true);
      return;
    }
    const problem = await problemOf(response);
    if (problem.code === "invalid_verification_token") {
      retry.hidden = true; // unknown, used or expired: trying again cannot help
      showMessage([problem.detail, " Sign in to the app to have a new link sent."], "error", true);
    } else {
      retry.hidden = false; // 429, 503 and the like pass
      showMessage([problem.detail], "error", true);
    }
  } catch {
    retry.hidden = false;
    showMessage([NETWORK_ERROR], "error", true);
  } finally {
    retry.disabled = false;
  }
}
