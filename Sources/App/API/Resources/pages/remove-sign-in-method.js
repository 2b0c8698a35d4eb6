"use strict";

// Removes a way to sign in (a passkey, a linked Apple or Google identity) from the link mailed
// when it was added: <public-url>/remove-sign-in-method#token=… The token travels in the URL
// fragment so it never reaches a server log or a Referer; it is read once and removed from the
// address bar (`confirmLink`).
confirmLink({
  path: "/users/sign-in-methods/remove",
  buttonId: "remove",
  progress: "Removing it…",
  invalidCode: "invalid_token",
  done: () => ["It was removed, and every device was signed out. Sign in again and change your password: someone else may know it."],
});
