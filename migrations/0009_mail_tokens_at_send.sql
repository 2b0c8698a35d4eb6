-- No usable token at rest: a mailed link's token is made when its mail is sent, not when the mail
-- is queued. The outbox row names the token's slot (an `account_tokens` row, whose hash is NULL
-- until then); the sender makes a token, stores its SHA-256 in the slot, commits, and only then
-- sends. A retry makes a new token (the older one, perhaps never delivered, stops working). So no
-- table, queue or backup holds a token at any moment: `account_tokens` has hashes,
-- `mail_outbox` slot ids, `password_reset_requests` neither.

ALTER TABLE account_tokens DROP CONSTRAINT account_tokens_pkey;
ALTER TABLE account_tokens ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
ALTER TABLE account_tokens ALTER COLUMN token_hash DROP NOT NULL;
ALTER TABLE account_tokens ADD CONSTRAINT account_tokens_token_hash_key UNIQUE (token_hash);

-- Mail queued before this migration: its token becomes its slot's reference; a mail whose token
-- no longer has a live row would only carry a dead link, and goes.
UPDATE mail_outbox o
SET variables = (o.variables - 'token') || jsonb_build_object('tokenSlot', t.id::text)
FROM account_tokens t
WHERE o.variables ? 'token' AND t.token_hash = sha256(convert_to(o.variables ->> 'token', 'UTF8'));
DELETE FROM mail_outbox WHERE variables ? 'token';

-- Queued reset requests keep no token either: the resolver makes the slot.
ALTER TABLE password_reset_requests DROP COLUMN token, DROP COLUMN token_hash;

DROP FUNCTION exo_request_password_reset(text, bytea, text, double precision, text[], integer[], double precision[], text, text);

-- Counts the attempt on the request's throttles (`exo_throttle_acquire`) and, unless one is full,
-- queues the request. Returns 0, or the seconds to wait (and then queues nothing).
CREATE FUNCTION exo_request_password_reset(
    email_key text, lifetime double precision,
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
    INSERT INTO password_reset_requests (email_normalized, lifetime_seconds, client_address, client_agent)
    VALUES (email_key, lifetime, address, agent);
    RETURN 0;
END
$$;

-- Resolves up to `batch` queued requests, oldest first; returns how many it took. For a
-- registered address: the user's older reset tokens are voided, a slot for the request's token is
-- made (it expires its lifetime after the request), its mail queued with the slot's id and the
-- event recorded, unless a newer request of the user was resolved first (by another instance),
-- which voids this one.
CREATE OR REPLACE FUNCTION exo_resolve_password_resets(batch integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    request record;
    found_user record;
    slot bigint;
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
        VALUES (NULL, found_user.id, 'password_reset', request.requested_at,
                request.requested_at + make_interval(secs => request.lifetime_seconds))
        RETURNING id INTO slot;
        INSERT INTO mail_outbox (template, recipient, variables)
        VALUES ('password_reset', found_user.email,
                jsonb_build_object('tokenSlot', slot::text, 'firstname', found_user.firstname, 'email', found_user.email));
        INSERT INTO security_events (user_id, type, at, ip_address, user_agent)
        VALUES (found_user.id, 'password_reset_requested', request.requested_at, request.client_address, request.client_agent);
    END LOOP;
    RETURN taken;
END
$$;
