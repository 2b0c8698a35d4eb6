"use strict";

// Undoes a change of the account's email address from the link mailed to the old address:
// <public-url>/undo-email-change#token=… The token travels in the URL fragment so it never reaches
// a server log or a Referer; it is read once and removed from the address bar (`confirmLink`).
confirmLink({
  path: "/users/email-change/undo",
  buttonId: "undo",
  progress: "Putting your address back…",
  invalidCode: "invalid_undo_token",
  done: (result) => {
    const email = result && typeof result.email === "string" ? result.email : null;
    const restored = email ? ["Your address ", strong(email), " is back."] : ["Your address is back."];
    return [...restored, " Every device was signed out. Sign in again, and change your password if someone else knows it."];
  },
});
