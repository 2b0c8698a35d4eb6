"use strict";

// What both recovery pages use; loaded before each page's own script (both `defer`, so in order).

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
