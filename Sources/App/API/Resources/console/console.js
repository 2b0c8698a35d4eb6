"use strict";

// The administrators' console: one page over the /admin/ API. The admin token lives in this tab's
// sessionStorage (never a cookie: there is nothing a foreign site could make the browser send), and
// every text from the API enters the page as a text node, never as HTML.

const TOKEN_KEY = "exosphere.console.session";
const TYPES = ["string", "integer", "double", "boolean", "date", "datetime"];
const PAGE_SIZE = 25;

const state = {
  session: readSession(), // {token, expiresAt, email}
  schema: {}, // name -> {type, pinned, createdAt}
  users: {cursors: [null], filters: []},
  audit: {cursors: [null]},
  user: null, // {view, etag, edits}
  setupToken: takeSetupToken(), // from the one-time link `exosphere serve` prints while there is no administrator
};

// MARK: - Small helpers

function $(id) { return document.getElementById(id); }

function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "text") element.textContent = value;
    else if (name === "className") element.className = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) element.append(child);
  return element;
}

function svg(tag, attributes = {}, text) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function when(text) {
  if (!text) return "—";
  const date = new Date(text);
  return isNaN(date) ? text : date.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

function readSession() {
  try {
    const session = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || "null");
    if (session && session.token && Date.parse(session.expiresAt) > Date.now()) return session;
  } catch (_) { /* nothing usable stored */ }
  sessionStorage.removeItem(TOKEN_KEY);
  return null;
}

// The setup link's token (#setup=…), taken out of the address bar at once so that it stays out of
// the history and of screenshots.
function takeSetupToken() {
  if (!location.hash.startsWith("#setup=")) return null;
  const token = decodeURIComponent(location.hash.slice("#setup=".length));
  history.replaceState(null, "", location.pathname + location.search);
  return token || null;
}

// The live region: the API's `detail` for failures, a short confirmation for successes.
function say(text, kind = "error") {
  const message = $("message");
  message.textContent = text;
  message.className = `message ${kind}`;
  message.hidden = false;
  if (kind === "error") message.focus();
}

function quiet() { $("message").hidden = true; }

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || `The server answered ${status}.`);
    this.status = status;
    this.problem = problem;
  }
}

// One API call. The body is a JSON text, an object, or nothing. 401 ends the console's session.
async function api(method, path, body, headers = {}) {
  const init = {method, headers: {Accept: "application/json, application/problem+json", ...headers}, credentials: "omit", cache: "no-store"};
  if (state.session) init.headers.Authorization = `Bearer ${state.session.token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = init.headers["Content-Type"] || "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (_) {
    throw new ApiError(0, {detail: "The server cannot be reached. Check the connection and try again."});
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
  if (response.ok) return {json, response};
  const problem = json && typeof json === "object" ? json : {detail: `The server answered ${response.status} ${response.statusText}.`};
  if (response.status === 401 && !["/admin/signin", "/admin/signin/mfa", "/admin/setup"].includes(path)) {
    endSession();
    problem.detail = "Your console session has ended. Sign in again.";
  }
  const retry = response.headers.get("Retry-After");
  if (retry && (response.status === 429 || response.status === 503)) problem.detail = `${problem.detail} Try again in ${retry} s.`;
  throw new ApiError(response.status, problem);
}

// Runs an action; whatever it throws is shown as the API's detail.
async function attempt(action) {
  try {
    await action();
  } catch (error) {
    // The deployment requires a second factor and this administrator has none: enrol first.
    if (error instanceof ApiError && error.problem.code === "mfa_enrolment_required" && location.hash !== "#/mfa") {
      state.flash = "This deployment requires two-step verification: turn it on to use the console.";
      location.hash = "#/mfa";
      return;
    }
    say(error instanceof ApiError ? error.message : `Something went wrong in the console: ${error.message}`);
    if (!state.session) route();
  }
}

// An admin session from `/admin/signin` or `/admin/setup`, kept in this tab only.
function beginSession(json) {
  state.session = {token: json.accessToken, expiresAt: json.expiresAt, email: json.admin.email};
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify(state.session));
}

function endSession() {
  state.session = null;
  sessionStorage.removeItem(TOKEN_KEY);
}

// MARK: - Routing: #/dashboard, #/users?q=…&field.NAME=…, #/users/ID, #/schema, #/audit

const PAGES = ["signin", "setup", "dashboard", "users", "user", "schema", "audit", "mfa"];

function showPage(name) {
  for (const page of PAGES) $(`page-${page}`).hidden = page !== name;
  $("top").hidden = name === "signin" || name === "setup";
  for (const link of document.querySelectorAll(".top nav a")) {
    const current = link.id === `nav-${name === "user" ? "users" : name}`;
    if (current) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  if (state.session) $("who").textContent = state.session.email;
}

async function route() {
  if (!state.session && state.setupToken) {
    showPage("setup");
    $("setup-email").focus();
    return;
  }
  if (!state.session) {
    showPage("signin");
    $("signin-email").focus();
    return;
  }
  const hash = location.hash.slice(1) || "/dashboard";
  const [path, query = ""] = hash.split("?");
  const parts = path.split("/").filter(Boolean);
  document.title = "Exosphere console";
  await attempt(async () => {
    if (parts[0] === "users" && parts[1]) await showUser(decodeURIComponent(parts[1]));
    else if (parts[0] === "users") await showUsers(new URLSearchParams(query));
    else if (parts[0] === "schema") await showSchema();
    else if (parts[0] === "audit") await showAudit();
    else if (parts[0] === "mfa") await showSecondFactor();
    else await showDashboard();
  });
  if (state.flash) {
    say(state.flash, "success");
    state.flash = null;
  }
}

// MARK: - Sign-in

async function signIn(event) {
  event.preventDefault();
  quiet();
  const email = $("signin-email").value.trim();
  const password = $("signin-password").value;
  if (!email || !password) return say("Enter your email and password.");
  $("signin-submit").disabled = true;
  await attempt(async () => {
    try {
      const {json} = await api("POST", "/admin/signin", {email, password});
      await signedIn(json);
    } catch (error) {
      // The password was right and the second factor is on: its code finishes the sign-in.
      if (!(error instanceof ApiError && error.problem.code === "mfa_required")) throw error;
      state.mfaToken = error.problem.mfaToken;
      $("signin-password").value = "";
      $("signin-form").hidden = true;
      $("signin-mfa-form").hidden = false;
      $("signin-code").focus();
    }
  });
  $("signin-submit").disabled = false;
}

async function finishSignIn(event) {
  event.preventDefault();
  quiet();
  const code = $("signin-code").value.trim();
  if (!code || !state.mfaToken) return say("Enter the code.");
  $("signin-code-submit").disabled = true;
  await attempt(async () => {
    try {
      const {json} = await api("POST", "/admin/signin/mfa", {mfaToken: state.mfaToken, code});
      state.mfaToken = null;
      $("signin-code").value = "";
      $("signin-mfa-form").hidden = true;
      $("signin-form").hidden = false;
      await signedIn(json);
    } catch (error) {
      // Five wrong codes, or too late: start over with the password.
      if (error instanceof ApiError && error.problem.code === "invalid_mfa_token") {
        state.mfaToken = null;
        $("signin-mfa-form").hidden = true;
        $("signin-form").hidden = false;
      }
      throw error;
    }
  });
  $("signin-code-submit").disabled = false;
}

async function signedIn(json) {
  beginSession(json);
  $("signin-password").value = "";
  if (!location.hash || location.hash === "#/") history.replaceState(null, "", "#/dashboard");
  await route();
}

// MARK: - The administrator's own second factor

async function showSecondFactor() {
  const {json} = await api("GET", "/admin/me/mfa");
  showPage("mfa");
  $("mfa-state").textContent = json.totp.enabled
    ? "Two-step verification is on: signing in asks for a code from your authenticator app."
    : json.required
      ? "This deployment requires two-step verification. Turn it on to use the console."
      : "Two-step verification is off.";
  $("mfa-start").hidden = json.totp.enabled;
  $("mfa-enrol").hidden = true;
}

async function startEnrolment() {
  quiet();
  await attempt(async () => {
    const {json} = await api("POST", "/admin/me/mfa/totp");
    // The server's own drawing of the URI: parsed as SVG markup, never as HTML, and no script.
    const svg = new DOMParser().parseFromString(json.qrCodeSvg, "image/svg+xml").documentElement;
    if (svg.nodeName !== "svg" || svg.querySelector("script")) throw new Error("the QR code is not an SVG drawing");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "QR code of the key for your authenticator app");
    $("mfa-qr").replaceChildren(document.importNode(svg, true));
    $("mfa-secret").textContent = json.secret;
    $("mfa-enrol").hidden = false;
    $("mfa-codes").hidden = true;
    $("mfa-code").focus();
  });
}

async function confirmEnrolment(event) {
  event.preventDefault();
  quiet();
  const code = $("mfa-code").value.trim();
  if (!code) return say("Enter the app's code.");
  await attempt(async () => {
    const {json} = await api("POST", "/admin/me/mfa/totp/confirm", {code});
    $("mfa-code").value = "";
    $("mfa-enrol").hidden = true;
    $("mfa-start").hidden = true;
    $("mfa-state").textContent = "Two-step verification is on: signing in asks for a code from your authenticator app.";
    $("mfa-codes-list").replaceChildren(...json.recoveryCodes.map((code) => el("li", {}, el("code", {text: code}))));
    $("mfa-codes").hidden = false;
    say("Two-step verification is on.", "success");
  });
}

// The first administrator, from the setup link: the answer is a session, as a sign-in's.
async function setUp(event) {
  event.preventDefault();
  quiet();
  const email = $("setup-email").value.trim();
  const password = $("setup-password").value;
  if (!email || !password) return say("Enter your email and a password.");
  $("setup-submit").disabled = true;
  try {
    const {json} = await api("POST", "/admin/setup", {token: state.setupToken, email, password});
    state.setupToken = null;
    beginSession(json);
    $("setup-password").value = "";
    history.replaceState(null, "", "#/dashboard");
    state.flash = "You are the first administrator. More are made on the server: exosphere admin create.";
    await route();
  } catch (error) {
    // A used or expired link, or an administrator made meanwhile: the way on is the sign-in.
    if (error instanceof ApiError && (error.status === 401 || error.status === 409)) {
      state.setupToken = null;
      await route();
    }
    say(error instanceof ApiError ? error.message : `Something went wrong in the console: ${error.message}`);
  }
  $("setup-submit").disabled = false;
}

async function signOut() {
  try { await api("POST", "/admin/signout"); } catch (_) { /* the session ends here either way */ }
  endSession();
  say("You are signed out.", "success");
  route();
}

// MARK: - Dashboard

async function showDashboard() {
  const {json} = await api("GET", "/admin/stats");
  showPage("dashboard");
  const counts = [["Users", json.users], ["Guests", json.guests], ["Disabled", json.disabledUsers], ["Active sessions", json.activeSessions], ["Images", json.images]];
  $("counts").replaceChildren(...counts.map(([name, value]) => el("div", {}, el("dt", {text: name}), el("dd", {text: value.toLocaleString("en")}))));
  drawChart(json.days);
  $("chart-table").tBodies[0].replaceChildren(...json.days.map((day) =>
    el("tr", {}, el("th", {scope: "row", text: day.date}), el("td", {text: day.signUps}), el("td", {text: day.signIns}))));
}

// Bars for sign-ups, a line for sign-ins, drawn here as SVG.
function drawChart(days) {
  const width = 640, height = 240, left = 40, right = 10, top = 12, bottom = 28;
  const most = Math.max(1, ...days.map((d) => Math.max(d.signUps, d.signIns)));
  const step = niceStep(most / 4);
  const ceiling = Math.ceil(most / step) * step;
  const x = (i) => left + (i + 0.5) * ((width - left - right) / days.length);
  const y = (v) => top + (height - top - bottom) * (1 - v / ceiling);
  const band = (width - left - right) / days.length;
  const total = (key) => days.reduce((sum, d) => sum + d[key], 0);
  const chart = svg("svg", {viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": "chart-title chart-summary", id: "chart-svg"});
  chart.append(svg("desc", {id: "chart-summary"},
    `${total("signUps")} sign-ups and ${total("signIns")} sign-ins from ${days[0].date} to ${days[days.length - 1].date}.`));
  for (let v = 0; v <= ceiling; v += step) {
    chart.append(svg("line", {class: "grid-line", x1: left, x2: width - right, y1: y(v), y2: y(v)}));
    chart.append(svg("text", {class: "label", x: left - 6, y: y(v) + 4, "text-anchor": "end"}, String(v)));
  }
  days.forEach((day, i) => {
    const bar = svg("rect", {class: "signups", x: x(i) - band * 0.35, width: band * 0.7, y: y(day.signUps), height: y(0) - y(day.signUps)});
    bar.append(svg("title", {}, `${day.date}: ${day.signUps} sign-ups, ${day.signIns} sign-ins`));
    chart.append(bar);
    if (i % 5 === 4 || i === days.length - 1) {
      chart.append(svg("text", {class: "label", x: x(i), y: height - 8, "text-anchor": "middle"}, day.date.slice(5)));
    }
  });
  chart.append(svg("polyline", {class: "signins", points: days.map((d, i) => `${x(i)},${y(d.signIns)}`).join(" ")}));
  days.forEach((day, i) => chart.append(svg("circle", {class: "signins-dot", cx: x(i), cy: y(day.signIns), r: 2.5})));
  chart.append(svg("line", {class: "axis", x1: left, x2: width - right, y1: y(0), y2: y(0)}));
  const legend = el("div", {className: "legend", "aria-hidden": "true"},
    el("span", {}, el("span", {className: "key signups"}), "Sign-ups"), el("span", {}, el("span", {className: "key signins"}), "Sign-ins"));
  $("chart").replaceChildren(chart, legend);
}

function niceStep(raw) {
  const power = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  for (const factor of [1, 2, 5, 10]) if (raw <= factor * power) return factor * power;
  return 10 * power;
}

// MARK: - Users

async function loadSchema() {
  const {json} = await api("GET", "/admin/schema");
  state.schema = json.fields;
  return state.schema;
}

// An input for a value of `type`: the right control for each.
function valueInput(type, id, value) {
  if (type === "boolean") {
    const select = el("select", {id}, el("option", {value: "true", text: "true"}), el("option", {value: "false", text: "false"}));
    if (value === false) select.value = "false";
    return select;
  }
  const input = el("input", {id, autocomplete: "off"});
  if (type === "integer") { input.type = "number"; input.step = "1"; input.inputMode = "numeric"; }
  else if (type === "double") { input.type = "number"; input.step = "any"; input.inputMode = "decimal"; }
  else if (type === "date") { input.type = "date"; }
  else if (type === "datetime") { input.type = "text"; input.placeholder = "2026-05-17T08:30:00Z"; }
  else { input.type = "text"; }
  if (value !== undefined && value !== null) input.value = String(value);
  return input;
}

function fillFieldSelect(select, names) {
  select.replaceChildren(...names.map((name) => el("option", {value: name, text: `${name} (${state.schema[name].type})`})));
  select.disabled = names.length === 0;
}

function filterValueControl() {
  const name = $("filter-field").value;
  const slot = $("filter-value-slot");
  if (!name) return slot.replaceChildren();
  const input = valueInput(state.schema[name].type, "filter-value");
  slot.replaceChildren(el("label", {for: "filter-value", className: "visually-hidden", text: `Value of ${name}`}), input);
}

function usersHash(q, filters, guest = $("search-guest").value) {
  const query = new URLSearchParams();
  if (q) query.set("q", q);
  if (guest) query.set("guest", guest);
  for (const [name, value] of filters) query.append(`field.${name}`, value);
  const text = query.toString();
  return text ? `#/users?${text}` : "#/users";
}

async function showUsers(query) {
  await loadSchema();
  showPage("users");
  const q = query.get("q") || "";
  const filters = [...query.entries()].filter(([key]) => key.startsWith("field.")).map(([key, value]) => [key.slice(6), value]);
  const searchKey = query.toString();
  if (state.users.key !== searchKey) state.users = {cursors: [null], key: searchKey};
  state.users.filters = filters;
  $("search-q").value = q;
  $("search-guest").value = query.get("guest") || "";
  fillFieldSelect($("filter-field"), Object.keys(state.schema).sort());
  filterValueControl();
  $("filters").replaceChildren(...filters.map(([name, value], index) => el("li", {},
    el("span", {text: `${name} = ${value}`}),
    removeButton(`Remove the filter ${name} = ${value}`, () => {
      location.hash = usersHash(q, filters.filter((_, i) => i !== index));
    }))));
  const cursor = state.users.cursors[state.users.cursors.length - 1];
  const params = new URLSearchParams(query);
  params.set("limit", String(PAGE_SIZE));
  if (cursor) params.set("after", cursor);
  const {json} = await api("GET", `/admin/users?${params}`);
  $("users-table").tBodies[0].replaceChildren(...json.users.map((user) => el("tr", {},
    el("td", {}, el("a", {href: `#/users/${user.id}`, text: user.email || "Guest"})),
    el("td", {className: "optional", text: [user.firstname, user.lastname].filter(Boolean).join(" ") || "—"}),
    el("td", {className: "optional", text: when(user.createdAt)}),
    el("td", {}, el("span", {className: user.disabled ? "badge off" : "badge on", text: user.disabled ? "disabled" : "active"}),
      ...(user.isGuest ? [" ", el("span", {className: "badge", text: "guest"})] : [])))));
  $("users-empty").hidden = json.users.length > 0;
  state.users.next = json.next;
  $("users-next").disabled = !json.next;
  $("users-first").disabled = state.users.cursors.length === 1;
}

function removeButton(label, action) {
  const button = el("button", {type: "button", className: "link", "aria-label": label, text: "×"});
  button.addEventListener("click", action);
  return button;
}

function search(event) {
  event.preventDefault();
  quiet();
  const hash = usersHash($("search-q").value.trim(), state.users.filters || []);
  state.users.key = undefined;
  if (location.hash === hash) route(); else location.hash = hash;
}

function addFilter() {
  const name = $("filter-field").value;
  const input = $("filter-value");
  if (!name || !input) return;
  const value = input.value.trim();
  if (!value) return say(`Enter a value for ${name}.`);
  location.hash = usersHash($("search-q").value.trim(), [...(state.users.filters || []), [name, value]]);
}

function pageUsers(next) {
  if (next && state.users.next) state.users.cursors.push(state.users.next);
  if (!next) state.users.cursors = [null];
  route();
}

// MARK: - One user

async function showUser(id) {
  await loadSchema();
  const [{json: view, response}, sessions, methods, images, activity] = await Promise.all([
    api("GET", `/admin/users/${encodeURIComponent(id)}`),
    api("GET", `/admin/users/${encodeURIComponent(id)}/sessions`),
    api("GET", `/admin/users/${encodeURIComponent(id)}/sign-in-methods`),
    api("GET", `/admin/users/${encodeURIComponent(id)}/images?order=newest&limit=24`),
    api("GET", `/admin/users/${encodeURIComponent(id)}/activity?limit=20`),
  ]);
  state.user = {view, etag: response.headers.get("ETag"), removed: new Set(), added: new Set()};
  showPage("user");
  document.title = `${view.email || "Guest"} · Exosphere console`;
  renderUser();
  renderSessions(sessions.json.sessions);
  renderSignInMethods(methods.json);
  renderImages(images.json, false);
  $("activity-table").tBodies[0].replaceChildren(...activity.json.events.map((event) => el("tr", {},
    el("td", {text: when(event.at)}), el("td", {text: event.type.replaceAll("_", " ")}),
    el("td", {text: event.ipAddress || "—"}), el("td", {text: event.userAgent || "—"}))));
}

function renderUser() {
  const {view} = state.user;
  $("user-title").textContent = view.email || "Guest";
  $("user-status").textContent = [
    view.disabled ? "Disabled" : "Active",
    // A guest has no address (nor any other way back in but its sessions) yet.
    view.isGuest ? "guest" : view.email === null ? "no email address" : view.emailVerified ? "email verified" : "email not verified",
    // The user asked to move to another address; it applies once its mailed link is opened.
    ...(view.pendingEmail ? [`change to ${view.pendingEmail} pending`] : []),
    `${view.sessionCount} session${view.sessionCount === 1 ? "" : "s"}`,
    `${view.imageCount} image${view.imageCount === 1 ? "" : "s"}`,
    `last sign-in ${when(view.lastSignInAt)}`, `joined ${when(view.createdAt)}`,
  ].join(" · ");
  $("user-disable").textContent = view.disabled ? "Enable user" : "Disable user";
  $("profile-email").value = view.email || "";
  $("profile-firstname").value = view.firstname;
  $("profile-lastname").value = view.lastname;
  const names = Object.keys(view.data).filter((name) => !state.user.removed.has(name)).concat([...state.user.added]).sort();
  $("profile-fields").replaceChildren(...names.map((name) => fieldEditor(name, view.data[name])));
  fillFieldSelect($("new-field-name"), Object.keys(state.schema).filter((name) => !names.includes(name)).sort());
  $("new-field-add").disabled = $("new-field-name").disabled;
}

function fieldEditor(name, value) {
  const type = state.schema[name] ? state.schema[name].type : "string";
  const id = `field-${name}`;
  const editor = el("div", {className: "field-editor"},
    el("label", {for: id, text: `${name} (${type})`}), valueInput(type, id, value));
  const remove = el("button", {type: "button", className: "link remove", text: `Remove ${name}`});
  remove.addEventListener("click", () => {
    if (state.user.added.has(name)) state.user.added.delete(name); else state.user.removed.add(name);
    renderUser();
  });
  editor.append(remove);
  return editor;
}

// The custom field's JSON text from its editor; numbers keep their digits as typed.
function fieldJSON(name) {
  const type = state.schema[name] ? state.schema[name].type : "string";
  const raw = $(`field-${name}`).value.trim();
  if (type === "boolean") return raw === "true" ? "true" : "false";
  if (type === "integer") {
    if (!/^-?\d+$/.test(raw)) throw new Error(`${name} must be a whole number.`);
    return raw;
  }
  if (type === "double") {
    if (raw === "" || !isFinite(Number(raw))) throw new Error(`${name} must be a number.`);
    return raw;
  }
  return JSON.stringify(raw);
}

async function saveProfile(event) {
  event.preventDefault();
  quiet();
  const {view} = state.user;
  const parts = [];
  const text = (key, value) => { if (value !== view[key]) parts.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`); };
  const email = $("profile-email").value.trim();
  if (email || view.email !== null) text("email", email);
  text("firstname", $("profile-firstname").value);
  text("lastname", $("profile-lastname").value);
  const data = [];
  try {
    for (const editor of $("profile-fields").querySelectorAll("input, select")) {
      const name = editor.id.slice("field-".length);
      data.push(`${JSON.stringify(name)}:${fieldJSON(name)}`);
    }
  } catch (error) {
    return say(error.message);
  }
  for (const name of state.user.removed) data.push(`${JSON.stringify(name)}:null`);
  if (data.length) parts.push(`"data":{${data.join(",")}}`);
  if (!parts.length) return say("Nothing changed.", "success");
  await attempt(async () => {
    const {json, response} = await api("PATCH", `/admin/users/${view.id}`, `{${parts.join(",")}}`,
      {"Content-Type": "application/merge-patch+json", ...(state.user.etag ? {"If-Match": state.user.etag} : {})});
    state.user = {view: json, etag: response.headers.get("ETag"), removed: new Set(), added: new Set()};
    renderUser();
    say("The profile is saved.", "success");
  });
}

function addField() {
  const name = $("new-field-name").value;
  if (!name) return;
  state.user.removed.delete(name);
  if (!(name in state.user.view.data)) state.user.added.add(name);
  renderUser();
  const input = $(`field-${name}`);
  if (input) input.focus();
}

function renderSessions(sessions) {
  $("sessions-table").tBodies[0].replaceChildren(...sessions.map((session) => {
    const revoke = el("button", {type: "button", className: "secondary", text: "End", "aria-label": `End the session started ${when(session.createdAt)}`});
    revoke.addEventListener("click", () => attempt(async () => {
      await api("DELETE", `/admin/users/${state.user.view.id}/sessions/${session.id}`);
      say("The session has ended.", "success");
      await showUser(state.user.view.id);
    }));
    return el("tr", {}, el("td", {text: when(session.createdAt)}), el("td", {text: when(session.lastSeenAt)}),
      el("td", {text: session.userAgent || "—"}), el("td", {text: when(session.expiresAt)}), el("td", {}, revoke));
  }));
  $("sessions-revoke-all").disabled = sessions.length === 0;
}

// Passkeys and linked identities, each removable (audited). The last one too: the user gets in
// again by a password reset, which the page says when there is no password.
function renderSignInMethods(methods) {
  $("password-state").textContent = methods.hasPassword
    ? "The user has a password."
    : "The user has no password: without a passkey or a linked identity, a password reset is their way back in.";
  const providers = {apple: "Sign in with Apple", google: "Sign in with Google"};
  const row = (method, label, entry, path, done) => {
    const remove = el("button", {type: "button", className: "secondary", text: "Remove", "aria-label": `Remove ${method}: ${label}`});
    remove.addEventListener("click", () => attempt(async () => {
      await api("DELETE", `/admin/users/${state.user.view.id}/${path}`);
      say(done, "success");
      await showUser(state.user.view.id);
    }));
    return el("tr", {}, el("td", {text: method}), el("td", {text: label}), el("td", {text: when(entry.createdAt)}),
      el("td", {text: entry.lastUsedAt ? when(entry.lastUsedAt) : "never"}), el("td", {}, remove));
  };
  const rows = [
    ...methods.passkeys.map((passkey) => row("Passkey", passkey.name + (passkey.backedUp ? " (synced)" : ""), passkey,
      `passkeys/${passkey.id}`, "The passkey was removed.")),
    ...methods.identities.map((identity) => row(providers[identity.provider] || identity.provider, identity.email || "—", identity,
      `identities/${identity.id}`, "The identity was unlinked.")),
  ];
  $("methods-table").tBodies[0].replaceChildren(...rows);
  $("methods-empty").hidden = rows.length > 0;
  const mfa = methods.mfa || {totp: {enabled: false}, recoveryCodesLeft: 0};
  $("user-mfa").textContent = mfa.totp.enabled
    ? `Two-step verification is on (${mfa.recoveryCodesLeft} recovery code${mfa.recoveryCodesLeft === 1 ? "" : "s"} left).`
    : "Two-step verification is off.";
  $("user-mfa-reset").hidden = !mfa.totp.enabled;
}

// For a user who lost their phone and their recovery codes: audited, and the user is told.
async function resetUserFactor() {
  await attempt(async () => {
    await api("DELETE", `/admin/users/${encodeURIComponent(state.user.view.id)}/mfa`);
    say("The user's two-step verification is off; they were told by mail.", "success");
    await showUser(state.user.view.id);
  });
}

function renderImages(page, append) {
  const items = page.images.map((image, index) => el("li", {},
    el("a", {href: image.signedUrl, target: "_blank", rel: "noopener noreferrer"},
      el("img", {src: image.signedThumbnails["256"], alt: `Image of ${image.width}×${image.height}, ${image.contentType}, uploaded ${when(image.createdAt)}`, loading: "lazy", width: 256, height: 256})),
    el("span", {className: "meta", text: `${image.width}×${image.height} · ${Math.ceil(image.byteSize / 1024)} KB`})));
  if (append) $("images-grid").append(...items); else $("images-grid").replaceChildren(...items);
  $("images-empty").hidden = $("images-grid").children.length > 0;
  state.user.imagesNext = page.next;
  $("images-more").hidden = !page.next;
}

async function moreImages() {
  await attempt(async () => {
    const {json} = await api("GET", `/admin/users/${state.user.view.id}/images?order=newest&limit=24&after=${encodeURIComponent(state.user.imagesNext)}`);
    renderImages(json, true);
  });
}

async function toggleDisabled() {
  const disabled = !state.user.view.disabled;
  await attempt(async () => {
    await api("PATCH", `/admin/users/${state.user.view.id}`, {disabled});
    say(disabled ? "The user is disabled and every session of theirs has ended." : "The user is enabled again.", "success");
    await showUser(state.user.view.id);
  });
}

async function sendReset() {
  await attempt(async () => {
    const {json} = await api("POST", `/admin/users/${state.user.view.id}/password-reset`);
    say(json.detail, "success");
  });
}

async function deleteUser() {
  await attempt(async () => {
    await api("DELETE", `/admin/users/${state.user.view.id}`);
    state.flash = `${state.user.view.email} is deleted.`;
    $("delete-confirm").hidden = true;
    location.hash = "#/users";
  });
}

async function revokeAll() {
  await attempt(async () => {
    await api("DELETE", `/admin/users/${state.user.view.id}/sessions`);
    say("Every session of the user has ended.", "success");
    await showUser(state.user.view.id);
  });
}

// MARK: - Schema

async function showSchema() {
  await loadSchema();
  showPage("schema");
  $("schema-table").tBodies[0].replaceChildren(...Object.keys(state.schema).sort().map((name) => {
    const field = state.schema[name];
    return el("tr", {}, el("th", {scope: "row", text: name}), el("td", {text: field.type}), el("td", {text: field.pinned ? "yes" : "no"}),
      el("td", {text: when(field.createdAt)}));
  }));
}

async function pin(event) {
  event.preventDefault();
  quiet();
  const name = $("pin-name").value.trim();
  const type = $("pin-type").value;
  if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name)) return say("A field name starts with a letter and has letters, digits and _ only (64 at most).");
  await attempt(async () => {
    const {json} = await api("PUT", `/admin/schema/${encodeURIComponent(name)}`, {type});
    await showSchema();
    say(`${json.name} is pinned as ${json.type}.`, "success");
  });
}

// MARK: - Audit log

async function showAudit() {
  const cursor = state.audit.cursors[state.audit.cursors.length - 1];
  const {json} = await api("GET", `/admin/audit?limit=${PAGE_SIZE}${cursor ? `&after=${encodeURIComponent(cursor)}` : ""}`);
  showPage("audit");
  $("audit-table").tBodies[0].replaceChildren(...json.entries.map((entry) => el("tr", {},
    el("td", {text: when(entry.at)}), el("td", {text: entry.adminEmail}), el("td", {text: entry.action}),
    el("td", {}, entry.targetUserId ? el("a", {href: `#/users/${entry.targetUserId}`, text: entry.targetUserId.slice(0, 8)}) : "—"),
    el("td", {text: entry.ipAddress || "—"}))));
  state.audit.next = json.next;
  $("audit-next").disabled = !json.next;
  $("audit-first").disabled = state.audit.cursors.length === 1;
}

function pageAudit(next) {
  if (next && state.audit.next) state.audit.cursors.push(state.audit.next);
  if (!next) state.audit.cursors = [null];
  attempt(showAudit);
}

// MARK: - Wiring

document.addEventListener("DOMContentLoaded", () => {
  $("pin-type").replaceChildren(...TYPES.map((type) => el("option", {value: type, text: type})));
  $("signin-form").addEventListener("submit", signIn);
  $("setup-form").addEventListener("submit", setUp);
  $("sign-out").addEventListener("click", signOut);
  $("search-form").addEventListener("submit", search);
  $("filter-field").addEventListener("change", filterValueControl);
  $("filter-add").addEventListener("click", addFilter);
  $("users-next").addEventListener("click", () => pageUsers(true));
  $("users-first").addEventListener("click", () => pageUsers(false));
  $("profile-form").addEventListener("submit", saveProfile);
  $("new-field-add").addEventListener("click", addField);
  $("user-disable").addEventListener("click", toggleDisabled);
  $("user-reset").addEventListener("click", sendReset);
  $("user-delete").addEventListener("click", () => { $("delete-confirm").hidden = false; $("user-delete-cancel").focus(); });
  $("user-delete-cancel").addEventListener("click", () => { $("delete-confirm").hidden = true; $("user-delete").focus(); });
  $("user-delete-confirm").addEventListener("click", deleteUser);
  $("sessions-revoke-all").addEventListener("click", revokeAll);
  $("signin-mfa-form").addEventListener("submit", finishSignIn);
  $("mfa-start").addEventListener("click", startEnrolment);
  $("mfa-confirm-form").addEventListener("submit", confirmEnrolment);
  $("user-mfa-reset").addEventListener("click", resetUserFactor);
  $("images-more").addEventListener("click", moreImages);
  $("pin-form").addEventListener("submit", pin);
  $("audit-next").addEventListener("click", () => pageAudit(true));
  $("audit-first").addEventListener("click", () => pageAudit(false));
  window.addEventListener("hashchange", () => { quiet(); route(); });
  route();
});
