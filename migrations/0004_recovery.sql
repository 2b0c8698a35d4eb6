-- Account security and recovery: the tokens mailed to users, the mail outbox, and each user's
-- security events (their activity).

-- Password reset and email verification tokens. Only the SHA-256 of a token is kept; the token
-- itself exists in the mail (and in its outbox row until that is delivered).
CREATE TABLE account_tokens (
    token_hash       bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose          text NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
    -- The address a verification token was sent to: it verifies that address only.
    email_normalized text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL
);
-- A newer request, a password change or a use deletes the user's tokens of a purpose.
CREATE INDEX account_tokens_user ON account_tokens (user_id, purpose);
-- Housekeeping deletes expired tokens.
CREATE INDEX account_tokens_expires_at ON account_tokens (expires_at);

-- The transactional outbox: a mail is a row written in the transaction of the event that causes
-- it, so it is sent if and only if that event committed. Each instance's sender claims due rows
-- (FOR UPDATE SKIP LOCKED, by moving next_attempt_at past a lease), delivers them, and deletes
-- them; a transient failure moves next_attempt_at by a backoff, a permanent one marks the row
-- failed with the relay's reply and drops its variables (a link's token among them).
CREATE TABLE mail_outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    template        text NOT NULL,
    recipient       text NOT NULL,
    -- The template's values, as a JSON object of strings.
    variables       jsonb NOT NULL CHECK (jsonb_typeof(variables) = 'object'),
    created_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed')),
    last_error      text
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX mail_outbox_failed ON mail_outbox (created_at) WHERE status = 'failed';

-- What a user sees at GET /users/me/activity: sign-ins, failures, password and email changes.
-- Kept 90 days.
CREATE TABLE security_events (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type       text NOT NULL CHECK (type IN (
        'signed_in', 'sign_in_failed', 'signed_out', 'session_revoked', 'password_changed',
        'password_reset_requested', 'password_reset', 'email_changed', 'email_verified', 'locked_out')),
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    ip_address text,
    user_agent text
);
-- The listing: a user's events newest first, paged by (at, id).
CREATE INDEX security_events_user_at ON security_events (user_id, at DESC, id DESC);
CREATE INDEX security_events_at ON security_events (at);

-- POST /users/password-reset writes the same row whether or not the address is registered, so
-- that both answers cost the same: the request is counted on its throttles and queued here, with
-- its token. A background round (`exo_resolve_password_resets`, every instance, SKIP LOCKED) then
-- turns the requests for registered addresses into a stored token hash, a queued mail and an
-- event, and drops the rest. The token exists in plain text only in this row (until the round,
-- within a second or so) and then in the outbox row (until delivery).
CREATE TABLE password_reset_requests (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_normalized text NOT NULL,
    token_hash       bytea NOT NULL CHECK (octet_length(token_hash) = 32),
    token            text NOT NULL,
    lifetime_seconds double precision NOT NULL,
    client_address   text,
    client_agent     text,
    requested_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX password_reset_requests_email ON password_reset_requests (email_normalized);

-- Counts the attempt on the request's throttles (`exo_throttle_acquire`) and, unless one is full,
-- queues the request. Returns 0, or the seconds to wait (and then queues nothing).
CREATE FUNCTION exo_request_password_reset(
    email_key text, new_token_hash bytea, new_token text, lifetime double precision,
    keys text[], limits integer[], windows double precision[], address text, agent text)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    wait integer;
BEGIN
    wait := exo_throttle_acquire(keys, limits, windows);
    IF wait > 0 THEN
        RETURN wait;
    END IF;
    INSERT INTO password_reset_requests (email_normalized, token_hash, token, lifetime_seconds, client_address, client_agent)
    VALUES (email_key, new_token_hash, new_token, lifetime, address, agent);
    RETURN 0;
END
$$;

-- Resolves up to `batch` queued requests, oldest first; returns how many it took. For a
-- registered address: the user's older reset tokens are voided, the request's token stored (it
-- expires its lifetime after the request), its mail queued and the event recorded, unless a newer
-- request of the user was resolved first (by another instance), which voids this one.
CREATE FUNCTION exo_resolve_password_resets(batch integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    request record;
    found_user record;
    taken integer := 0;
BEGIN
    FOR request IN SELECT * FROM password_reset_requests ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED LOOP
        DELETE FROM password_reset_requests WHERE id = request.id;
        taken := taken + 1;
        -- The row lock orders the rounds of several instances for one user.
        SELECT id, email, firstname INTO found_user FROM users WHERE email_normalized = request.email_normalized FOR NO KEY UPDATE;
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM account_tokens WHERE user_id = found_user.id AND purpose = 'password_reset' AND created_at > request.requested_at);
        DELETE FROM account_tokens WHERE user_id = found_user.id AND purpose = 'password_reset';
        INSERT INTO account_tokens (token_hash, user_id, purpose, created_at, expires_at)
        VALUES (request.token_hash, found_user.id, 'password_reset', request.requested_at,
                request.requested_at + make_interval(secs => request.lifetime_seconds));
        INSERT INTO mail_outbox (template, recipient, variables)
        VALUES ('password_reset', found_user.email,
                jsonb_build_object('token', request.token, 'firstname', found_user.firstname, 'email', found_user.email));
        INSERT INTO security_events (user_id, type, at, ip_address, user_agent)
        VALUES (found_user.id, 'password_reset_requested', request.requested_at, request.client_address, request.client_agent);
    END LOOP;
    RETURN taken;
END
$$;
