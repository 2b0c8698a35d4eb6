#!/usr/bin/env bash
# API conformance: schemathesis fuzzes a live `exosphere serve` against the OpenAPI document it
# serves (GET /openapi.json), as a signed-in user, for a fixed time, and must find nothing.
#
#   scripts/conformance.sh [seconds=180] [--skip-build]
#
# Environment:
#   SEED                 default 1: the same seed draws the same cases in the same order (the time box
#                        cuts the run wherever the time runs out);
#   WORKERS              default 1: with 2, schemathesis 4.32.5 once failed a run with a "Runtime Error"
#                        of its own (a Hypothesis FlakyFailure from a cache its coverage phase shares
#                        between threads); one worker also keeps the hashing pool far from its 503;
#   CONFORMANCE_VENV     default /tmp/exosphere-conformance-venv-<version>, reused when it already
#                        holds the pinned schemathesis;
#   CONFORMANCE_KEEP_LOG a path: keep the server's log (access log included) there.
#
# Needs python3 with the venv module (as root on Debian the script installs python3-venv when it
# is missing) and whatever `swift build` and `exosphere serve` need (README). Builds
# `exosphere` in release mode first (the caller serializes builds; this script takes no lock).
# Exits non-zero when schemathesis reports any failure or error; always stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

SCHEMATHESIS_VERSION=4.32.5
PROMETHEUS_CLIENT_VERSION=0.26.0
seconds=180
skip_build=false
for argument in "$@"; do
    case $argument in
        --skip-build) skip_build=true ;;
        ''|*[!0-9]*) echo "usage: $0 [seconds=180] [--skip-build]" >&2; exit 2 ;;
        *) seconds=$argument ;;
    esac
done
seed=${SEED:-1}
workers=${WORKERS:-1}

log() { printf 'conformance: %s\n' "$*" >&2; }

# --- schemathesis in a virtual environment ------------------------------------------------------
venv=${CONFORMANCE_VENV:-/tmp/exosphere-conformance-venv-$SCHEMATHESIS_VERSION}
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -qF "version $SCHEMATHESIS_VERSION"; then
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            log "installing python3-venv"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        else
            log "python3's venv module is missing: apt-get install python3-venv"
            exit 1
        fi
    fi
    log "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --disable-pip-version-check -q "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$venv/bin/schemathesis" --version >&2
# The real Prometheus parser, for the /metrics check after the run.
"$venv/bin/python" -c 'import prometheus_client' 2>/dev/null \
    || "$venv/bin/pip" install --disable-pip-version-check -q "prometheus-client==$PROMETHEUS_CLIENT_VERSION"

# --- the server -----------------------------------------------------------------------------------
if ! $skip_build; then
    # The README's, the Dockerfile's and CI's release build.
    scripts/build-release.sh dist >&2
fi
exosphere=$root/dist/exosphere

work=$(mktemp -d "${TMPDIR:-/tmp}/exosphere-conformance.XXXXXX")
# As root the managed PostgreSQL runs as `postgres`, which must reach its data directory in here.
chmod 755 "$work"
server_pid=
stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=
    # A server that had to be killed leaves its PostgreSQL running: stop it (immediate shutdown).
    if [ -f "$work/postgres/postmaster.pid" ]; then
        postmaster=$(head -n 1 "$work/postgres/postmaster.pid")
        if [ -n "$postmaster" ] && kill -QUIT "$postmaster" 2>/dev/null; then
            for _ in $(seq 1 50); do kill -0 "$postmaster" 2>/dev/null || break; sleep 0.1; done
        fi
    fi
}
cleanup() {
    status=$?
    stop_server
    if [ -n "${CONFORMANCE_KEEP_LOG:-}" ] && [ -f "$work/server.log" ]; then cp "$work/server.log" "$CONFORMANCE_KEEP_LOG"; fi
    if [ "$status" != 0 ] && [ -f "$work/server.log" ]; then
        log "server log (last 40 lines):"
        tail -n 40 "$work/server.log" >&2 || true
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Port 0: the kernel picks a free port; the server logs it. Every request comes from 127.0.0.1, and
# the fuzzer and its hooks register far more than the 100 users an hour one address may, and upload
# more than the 200 images an hour one user may: no limits.
"$exosphere" serve --host 127.0.0.1 --port 0 --data-dir "$work/postgres" --registration-address-limit 0 --upload-rate 0 \
    --log-format json --log-level info >"$work/server.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1 600); do
    port=$(sed -n 's/.*"msg":"listening".*"http.port":"\([0-9]*\)".*/\1/p' "$work/server.log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { log "exosphere serve exited"; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { log "exosphere serve did not start listening within 60 s"; exit 1; }
api=http://127.0.0.1:$port
python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/readyz", timeout=10)' "$api"
log "exosphere listening on $api"

# --- a signed-in user ---------------------------------------------------------------------------
password=conformance-password-1  # a throwaway server: fixed, for reproducible runs
email=conformance-main@example.com
# (python3 rather than curl, which a fresh Debian may lack.)
token=$(python3 - "$api" "$email" "$password" <<'PYTHON'
import json, sys, urllib.request
api, email, password = sys.argv[1:]
body = json.dumps({"email": email, "password": password, "firstname": "Con", "lastname": "Formance"}).encode()
request = urllib.request.Request(api + "/users", data=body, method="POST", headers={"Content-Type": "application/json"})
with urllib.request.urlopen(request, timeout=60) as response:
    print(json.load(response)["accessToken"])
PYTHON
)
[ -n "$token" ] || { log "registration returned no accessToken"; exit 1; }

# --- schemathesis -------------------------------------------------------------------------------
# The token goes in through an auth provider (a hooks module) rather than `-H Authorization`: the
# fuzzer may end the session it is given (`POST /users/signout` with an empty body signs out the
# calling session, `{"scope":"all"}` every session), and then every later authenticated request
# would be a 401 reported as a failure. With the provider, schemathesis re-authenticates on a 401
# and replays the request once: the provider registers a fresh user (registration is never
# throttled, whereas sign-in from 127.0.0.1 is locked after 100 failures, which the fuzzer makes).
# So no operation needs to be left out of the authenticated run, but one: GET /users/me/events is a
# stream that stays open while its session lives, which the fuzzer would wait on until its request
# timeout (EventsAPITests reads it as a client does).
mkdir -p "$work/hooks"
cat >"$work/hooks/exosphere_hooks.py" <<'PYTHON'
import json
import os
import time
import urllib.error
import urllib.request
import uuid

import schemathesis

API = os.environ["EXOSPHERE_API"]
PASSWORD = os.environ["EXOSPHERE_PASSWORD"]
# The user whose session the run holds: its email (None once deleted) and current password.
CURRENT = {"email": os.environ["EXOSPHERE_EMAIL"], "password": PASSWORD}


def register_user():
    """A new user's access token; waits out 503 overloaded / 429 as their Retry-After says."""
    for _ in range(30):
        email = f"conformance-{uuid.uuid4().hex}@example.com"
        body = json.dumps({"email": email, "password": PASSWORD})
        request = urllib.request.Request(API + "/users", data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                token = json.load(response)["accessToken"]
            CURRENT.update(email=email, password=PASSWORD)
            return token
        except urllib.error.HTTPError as error:
            if error.code not in (429, 503):
                raise
            time.sleep(min(int(error.headers.get("Retry-After") or 1), 5))
    raise RuntimeError("could not register a user: the server stays overloaded")


# Only the operations that need a session; the others get no Authorization header.
@schemathesis.auth(refresh_interval=10**9).apply_to(path_regex="^/users/(signout|me|me/.*|schema)$")
class ExosphereSession:
    def __init__(self):
        self.token = os.environ["EXOSPHERE_TOKEN"]

    def get(self, case, context):
        # The first call hands out the script's user; every later one follows a 401 (the fuzzer
        # ended the session or deleted the user), so it signs up a new user.
        token, self.token = self.token, None
        return token or register_user()

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


# The fuzzer cannot know the credentials, so POST /users/signin would only ever be 401 (then 429),
# POST /users/me/password and DELETE /users/me only 403 (then 429, once 5 wrong passwords lock
# them), and their success responses would go unchecked. Every third schema-valid case of them
# sends the current user's real email/password instead (still schema-valid): the sign-in, password
# change or deletion then succeeds; after the latter two the session's token stops working, and the
# next request re-authenticates as a new user (above).
_CREDENTIAL_FIELDS = {
    ("POST", "/users/signin"): ("email", "password"),
    ("POST", "/users/me/password"): (None, "oldPassword"),
    ("DELETE", "/users/me"): (None, "password"),
}
_credential_cases = 0


@schemathesis.hook
def before_call(context, case, kwargs):
    global _credential_cases
    fields = _CREDENTIAL_FIELDS.get((case.operation.method.upper(), case.operation.path))
    meta = case.meta
    if fields is None or not isinstance(case.body, dict) or meta is None or not meta.generation.mode.is_positive:
        return
    email_field, password_field = fields
    if password_field not in case.body or (email_field and (email_field not in case.body or not CURRENT["email"])):
        return
    _credential_cases += 1
    if _credential_cases % 3 == 0:
        if email_field:
            case.body[email_field] = CURRENT["email"]
        case.body[password_field] = CURRENT["password"]


@schemathesis.hook
def after_call(context, case, response):
    operation = (case.operation.method.upper(), case.operation.path)
    if operation == ("POST", "/users/me/password") and response.status_code == 200 and isinstance(case.body, dict):
        CURRENT["password"] = case.body["newPassword"]
    elif operation == ("DELETE", "/users/me") and response.status_code == 204:
        CURRENT["email"] = None


# positive_data_acceptance, less what no JSON Schema can promise. Schemathesis' own check wants
# every schema-valid request accepted; this one asks the same, except for answers that depend on
# state or on rules the document states in prose because JSON Schema cannot express them:
#   412 precondition_failed, when the request has If-Match: the schema cannot name the current ETag;
#   422 invalid_type on data.<name>: a field's type is fixed by the first write of the deployment
#       (API.md), so a later value of another type is refused, whatever the schema allows;
#   422 password_mismatch / password_unchanged: newPassword compared with confirmPassword/oldPassword;
#   422 weak_password for a password over 1024 UTF-8 bytes, 422 invalid_value on data.<name> for a
#       string over 4096 UTF-8 bytes: byte limits (the schema's maxLength counts characters);
#   422 invalid_value on data.<name> for an integer outside 64 bits or a non-finite number;
#   422 invalid_value on data: the 64 fields of PATCH count after the merge with the stored ones,
#       and the 64 KiB limit is on the whole user's JSON.
# A 422 is tolerated only when every entry of its `errors` is one of these.
import math

from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance as schemathesis_positive_data_acceptance


def _tolerated_field_error(error, body):
    field, code = error.get("field", ""), error.get("code")
    value = body.get(field)
    if code in ("password_mismatch", "password_unchanged"):
        return True
    if code == "weak_password":
        return isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) > 1024
    if field == "data":
        return code == "invalid_value"
    if field.startswith("data."):
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        value = data.get(field[len("data."):])
        if code == "invalid_type":
            return True
        if code == "invalid_value":
            if isinstance(value, str):
                return len(value.encode("utf-8", "surrogatepass")) > 4096
            if isinstance(value, bool):
                return False
            if isinstance(value, int):
                return not (-(2**63) <= value < 2**63)
            if isinstance(value, float):
                return not math.isfinite(value)
    return False


# The images API's rules on bytes and positions that no schema can state:
#   POST /users/me/images: the bytes must be the declared image format with sane headers (422
#       content_mismatch, truncated, malformed, invalid_dimensions, too_many_pixels, empty_image),
#       a multipart body must hold exactly one file part (422 no_file_part, multiple_file_parts;
#       400 for broken framing), and the image must fit the limit (413);
#   GET /users/me/images: a schema-valid `after` that names no instant the server could have
#       written is 422 invalid_cursor;
#   GET /users/me/images/{id}: a Range outside the image is 416.
# Passkeys, whose bytes no schema can judge: a registration whose client data, challenge or
#   attestation is not one this server can accept is 422 invalid_passkey; in both ceremonies a
#   member that is not base64url, or an `id` that is not the `rawId`, is 422 invalid_value.
# And those of account recovery, which depend on state no schema holds:
#   POST /users/password-reset/confirm, POST /users/verify-email, POST /users/email-change/undo,
#       POST /users/sign-in-methods/remove: a well-formed token that the server did not mail (or
#       that is used, expired or superseded) is 422 invalid_reset_token, invalid_verification_token,
#       invalid_undo_token or invalid_token;
#   POST /users/me/mfa/totp/confirm: a code that is not the authenticator's is 422 invalid_code;
#   POST /users/me/reauthenticate: a passkey assertion, an ID token or a code the server cannot
#       accept is 422 invalid_credentials, invalid_id_token or invalid_code, and an assertion's
#       member that is not base64url 422 invalid_value (as at the passkey sign-in);
#   GET /users/me/activity: as the image list, 422 invalid_cursor;
#   POST /users/me/password, DELETE /users/me, PUT /users/me: what the document marks optional
#       or nullable for an account without a password or an address (a guest, an account made by
#       a provider or a code) is 422 invalid_value for the signed-in user, who has both.
_IMAGE_CODES = {
    ("POST", "/users/me/images"): {
        400: None,
        413: None,
        422: {"content_mismatch", "truncated", "malformed", "invalid_dimensions", "too_many_pixels",
              "empty_image", "no_file_part", "multiple_file_parts"},
    },
    ("GET", "/users/me/images"): {422: {"invalid_cursor"}},
    ("GET", "/users/me/images/{id}"): {416: None},
    ("HEAD", "/users/me/images/{id}"): {416: None},
    ("POST", "/users/password-reset/confirm"): {422: {"invalid_reset_token"}},
    ("POST", "/users/verify-email"): {422: {"invalid_verification_token"}},
    ("POST", "/users/email-change/undo"): {422: {"invalid_undo_token"}},
    ("POST", "/users/sign-in-methods/remove"): {422: {"invalid_token"}},
    ("POST", "/users/me/mfa/totp/confirm"): {422: {"invalid_code"}},
    ("POST", "/users/me/reauthenticate"): {422: {"invalid_credentials", "invalid_id_token", "invalid_code", "invalid_value"}},
    ("GET", "/users/me/activity"): {422: {"invalid_cursor"}},
    ("HEAD", "/users/me/activity"): {422: {"invalid_cursor"}},
    ("POST", "/users/me/passkeys/registration"): {422: {"invalid_passkey", "invalid_value"}},
    ("POST", "/users/signin/passkey"): {422: {"invalid_value"}},
    ("POST", "/users/me/password"): {422: {"invalid_value"}},
    ("DELETE", "/users/me"): {422: {"invalid_value"}},
    ("PUT", "/users/me"): {422: {"invalid_value"}},
}


def _tolerated_image_answer(case, response):
    allowed = _IMAGE_CODES.get((case.operation.method.upper(), case.operation.path), {})
    if response.status_code not in allowed:
        return False
    codes = allowed[response.status_code]
    if codes is None:
        return True
    try:
        return response.json().get("code") in codes
    except Exception:
        return False


def _tolerated(case, response):
    headers = {name.lower() for name in (case.headers or {})}
    if _tolerated_image_answer(case, response):
        return True
    if response.status_code == 412:
        return "if-match" in headers
    if response.status_code != 422:
        return False
    try:
        problem = response.json()
    except Exception:
        return False
    errors = problem.get("errors") if isinstance(problem, dict) else None
    body = case.body if isinstance(case.body, dict) else {}
    return bool(errors) and all(isinstance(error, dict) and _tolerated_field_error(error, body) for error in errors)


@schemathesis.check
def exosphere_positive_data_acceptance(ctx, response, case):
    try:
        return schemathesis_positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if _tolerated(case, response):
            return None
        raise
PYTHON

# QUERY (an HTTP method still being standardised) is not one this server knows: it answers 501
# method_not_implemented, as RFC 9110 §9.1 and §15.6.2 prescribe for a method the origin server
# does not recognise (documented in the HTTPError response), not 405, which is for a method it
# knows but the resource does not allow. Every other method the coverage phase tries must be 405
# with `Allow`.
#
# negative_data_rejection: schemathesis' list plus 412. A schema-violating PUT/PATCH with a stale
# `If-Match` may be answered 412 precondition_failed rather than 422: RFC 9110 §13.2.1 evaluates
# preconditions before the request content is processed. 412 is a refusal that changes nothing,
# which is all this check asks; the server answers 412 only to If-Match.
cat >"$work/schemathesis.toml" <<'TOML'
[phases.coverage]
unexpected-methods = ["get", "put", "post", "delete", "options", "patch", "trace"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "412", "413", "415", "416", "422", "428", "429", "5xx"]
TOML

log "schemathesis: $seconds s, seed $seed, $workers worker(s)"
status=0
(
    cd "$work"
    export PYTHONPATH="$work/hooks" SCHEMATHESIS_HOOKS=exosphere_hooks
    export EXOSPHERE_API="$api" EXOSPHERE_EMAIL="$email" EXOSPHERE_PASSWORD="$password" EXOSPHERE_TOKEN="$token"
    "$venv/bin/schemathesis" --config-file "$work/schemathesis.toml" run "$api/openapi.json" \
        --checks all \
        --exclude-checks positive_data_acceptance \
        --exclude-operation-id streamUserEvents \
        --max-time "$seconds" \
        --seed "$seed" \
        --workers "$workers" \
        --generation-database none \
        --request-timeout 30 \
        --no-color \
        --report junit --report-dir "$work/report"
) || status=$?
if [ "$status" != 0 ]; then
    log "schemathesis found problems (exit status $status)"
    exit "$status"
fi
log "schemathesis found nothing"

# After thousands of requests of every kind, /metrics must still parse with a real parser.
"$venv/bin/python" -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())" \
    "$api/metrics" > "$work/metrics.txt"
"$venv/bin/python" scripts/check-metrics.py < "$work/metrics.txt" >&2
log "/metrics parses with prometheus_client"
