"use strict";

// Undoes a change of the account's email address from the link mailed to the old address:
// <public-url>/undo-email-change#token=… The token travels in the URL fragment so it never reaches
// a server log or a Referer. It is read once, removed from the address bar and kept in this
// variable only. Nothing is sent until the person presses the button.
const token = readToken();

// A new link pasted into this tab changes only the fragment, which loads nothing: start over with it.
addEventListener("hashchange", () => {
  if (new URLSearchParams(location.hash.slice(1)).has("token")) location.reload();
});

const NETWORK_ERROR = "The server could not be reached. Check your connection and try again.";

const confirmation = document.getElementById("confirm");
const button = document.getElementById("undo");

button.addEventListener("click", undo);

if (token) {
  confirmation.hidden = false;
} else {
  showMessage(["This link is incomplete. Open the link from the email again."], "error", true);
}

async function undo() {
  if (!token || button.disabled) return;
  button.disabled = true; // one request at a time: the token works once
  showMessage(["Putting your address back…"]);
  try {
    const response = await postJSON("/users/email-change/undo", {token});
    if (response.ok) {
      let result = null;
      try {
        result = await response.json();
      } catch {
        // restored all the same; the address is only shown when the body names it
      }
      confirmation.hidden = true;
      const email = result && typeof result.email === "string" ? result.email : null;
      const restored = email ? ["Your address ", strong(email), " is back."] : ["Your address is back."];
      showMessage(
        [...restored, " Every device was signed out. Sign in again, and change your password if someone else knows it."],
        "success", true);
      return;
    }
    const problem = await problemOf(response);
    if (problem.code === "invalid_undo_token") confirmation.hidden = true; // used or expired: trying again cannot help
    showMessage([problem.detail], "error", true);
  } catch {
    showMessage([NETWORK_ERROR], "error", true);
  } finally {
    button.disabled = false;
  }
}
