"use strict";

// Removes a way to sign in (a passkey, a linked Apple or Google identity) from the link mailed
// when it was added: <public-url>/remove-sign-in-method#token=… The token travels in the URL
// fragment so it never reaches a server log or a Referer. It is read once, removed from the address
// bar and kept in this variable only. Nothing is sent until the person presses the button.
const token = readToken();

// A new link pasted into this tab changes only the fragment, which loads nothing: start over with it.
addEventListener("hashchange", () => {
  if (new URLSearchParams(location.hash.slice(1)).has("token")) location.reload();
});

const NETWORK_ERROR = "The server could not be reached. Check your connection and try again.";

const confirmation = document.getElementById("confirm");
const button = document.getElementById("remove");

button.addEventListener("click", remove);

if (token) {
  confirmation.hidden = false;
} else {
  showMessage(["This link is incomplete. Open the link from the email again."], "error", true);
}

async function remove() {
  if (!token || button.disabled) return;
  button.disabled = true; // one request at a time: the token works once
  showMessage(["Removing it…"]);
  try {
    const response = await postJSON("/users/sign-in-methods/remove", {token});
    if (response.ok) {
      confirmation.hidden = true;
      showMessage(
        ["It was removed, and every device was signed out. Sign in again and change your password: someone else may know it."],
        "success", true);
      return;
    }
    const problem = await problemOf(response);
    if (problem.code === "invalid_token") confirmation.hidden = true; // used or expired: trying again cannot help
    showMessage([problem.detail], "error", true);
  } catch {
    showMessage([NETWORK_ERROR], "error", true);
  } finally {
    button.disabled = false;
  }
}
