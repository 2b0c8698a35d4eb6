"use strict";

// What the pages of mailed links use; loaded before each page's own script (both `defer`, so in order).

function readToken() {
  const value = new URLSearchParams(location.hash.slice(1)).get("token");
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  return value && value.trim() ? value.trim() : null;
}

// Shows text (strings become text nodes, never HTML) in the live region; `focus` moves focus to
// it so a screen reader reads the outcome and keyboard users continue from there.
function showMessage(parts, kind = "", focus = false) {
  const message = document.getElementById("message");
  message.replaceChildren(...parts);
  message.className = kind ? `message ${kind}` : "message";
  if (focus) message.focus();
}

function strong(text) {
  const element = document.createElement("strong");
  element.textContent = text;
  return element;
}

function postJSON(path, body) {
  return fetch(path, {
    method: "POST",
    headers: {"Content-Type": "application/json", "Accept": "application/json, application/problem+json"},
    body: JSON.stringify(body),
    credentials: "omit", // the API takes no cookies; the page must work without them
    cache: "no-store",
  });
}

// The API's own words for a failure (RFC 9457 `detail`), or a plain fallback when the body is not
// a problem document (a proxy's error page, say). 429 and 503 tell how long to wait.
async function problemOf(response) {
  let problem = null;
  try {
    problem = await response.json();
  } catch {
    // not JSON: use the fallback below
  }
  if (!problem || typeof problem !== "object") problem = {};
  let detail = typeof problem.detail === "string" && problem.detail.trim() ? problem.detail.trim() : null;
  if (!detail) {
    if (response.status === 429) detail = "Too many attempts.";
    else if (response.status === 503) detail = "The service is busy right now.";
    else detail = `Something went wrong (HTTP ${response.status}). Please try again later.`;
  }
  const seconds = Number.parseInt(response.headers.get("Retry-After") ?? "", 10);
  if ((response.status === 429 || response.status === 503) && seconds > 0) {
    const wait = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
    detail += ` Please try again in ${wait}.`;
  }
  return {
    code: problem.code, detail, errors: Array.isArray(problem.errors) ? problem.errors : [],
    mfaToken: typeof problem.mfaToken === "string" ? problem.mfaToken : null, // mfa_required's second step
  };
}

// A page whose link does one thing once confirmed (undo a change of address, remove a way in):
// its token is read from the fragment; nothing is sent until the person presses `buttonId` (a
// mail scanner that opens the link must change nothing); then `{token}` goes to `path`, and
// `done(result)` gives the words of success. A used or expired link (`invalidCode`) hides the
// button: trying again cannot help.
function confirmLink({path, buttonId, progress, done, invalidCode}) {
  const token = readToken();
  // A new link pasted into this tab changes only the fragment, which loads nothing: start over with it.
  addEventListener("hashchange", () => {
    if (new URLSearchParams(location.hash.slice(1)).has("token")) location.reload();
  });
  const confirmation = document.getElementById("confirm");
  const button = document.getElementById(buttonId);
  if (token) {
    confirmation.hidden = false;
  } else {
    showMessage(["This link is incomplete. Open the link from the email again."], "error", true);
  }
  button.addEventListener("click", async () => {
    if (!token || button.disabled) return;
    button.disabled = true; // one request at a time: the token works once
    showMessage([progress]);
    try {
      const response = await postJSON(path, {token});
      if (response.ok) {
        let result = null;
        try {
          result = await response.json();
        } catch {
          // done all the same; `done` says less without the body
        }
        confirmation.hidden = true;
        showMessage(done(result), "success", true);
        return;
      }
      const problem = await problemOf(response);
      if (problem.code === invalidCode) confirmation.hidden = true;
      showMessage([problem.detail], "error", true);
    } catch {
      showMessage(["The server could not be reached. Check your connection and try again."], "error", true);
    } finally {
      button.disabled = false;
    }
  });
}
