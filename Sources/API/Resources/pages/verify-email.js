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

// ---- Shared with reset-password.js (kept per page so each page is one script) ----

function readToken() {
  const value = new URLSearchParams(location.hash.slice(1)).get("token");
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  return value && value.trim() ? value.trim() : null;
}

// Shows text (strings become text nodes, never HTML) in the live region; `focus` moves focus to
// it so a screen reader reads the outcome and keyboard users continue from there.
function showMessage(parts, kind = "", focus = false) {
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
  return {code: problem.code, detail, errors: Array.isArray(problem.errors) ? problem.errors : []};
}
