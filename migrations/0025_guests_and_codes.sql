-- Guests and codes by mail (../shared/API.md, "Guests and codes by mail").

-- A guest has no address (and no password): both address columns are NULL together.
ALTER TABLE users ALTER COLUMN email DROP NOT NULL, ALTER COLUMN email_normalized DROP NOT NULL,
    ADD CONSTRAINT users_email_pair CHECK ((email IS NULL) = (email_normalized IS NULL));
-- True from `POST /users/guest` until the account has a way back in other than its sessions: an
-- address, a password, a passkey or an identity. Cleared by the database (below), whoever adds it.
ALTER TABLE users ADD COLUMN is_guest boolean NOT NULL DEFAULT false;
-- The guest sweep: guests by their last change (their sessions' use is checked per row).
CREATE INDEX users_guests_updated_at ON users (updated_at) WHERE is_guest;

-- The one BEFORE UPDATE trigger of users (0014) also ends guesthood with an address or a password.
CREATE OR REPLACE FUNCTION users_record_profile_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.is_guest AND (NEW.email IS NOT NULL OR NEW.password_hash <> '!') THEN
        NEW.is_guest := false;
    END IF;
    IF NEW.version IS DISTINCT FROM OLD.version THEN
        NEW.event_seq := OLD.event_seq + 1;
        IF EXISTS (SELECT 1 FROM live_streams WHERE user_id = NEW.id) THEN
            INSERT INTO user_events (user_id, seq, type) VALUES (NEW.id, NEW.event_seq, 'profile');
            PERFORM pg_notify('exosphere_user_events', NEW.id::text);
        END IF;
    END IF;
    INSERT INTO cache_invalidations (user_id) VALUES (NEW.id);
    RETURN NEW;
END $$;

-- A passkey or an identity added to a guest makes it a full account: a new version (the user's
-- representation changed), hence a profile event and a cache invalidation by the trigger above.
CREATE FUNCTION ways_in_end_guest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE users SET is_guest = false, version = version + 1, updated_at = now() WHERE id = NEW.user_id AND is_guest;
    RETURN NULL;
END $$;
CREATE TRIGGER passkeys_end_guest AFTER INSERT ON passkeys FOR EACH ROW EXECUTE FUNCTION ways_in_end_guest();
CREATE TRIGGER identities_end_guest AFTER INSERT ON identities FOR EACH ROW EXECUTE FUNCTION ways_in_end_guest();

-- A way in added while the account had no address was added by its only holder: nothing to
-- hijack, so a later reset (through an address confirmed since) keeps it (0021).
CREATE OR REPLACE FUNCTION ways_in_mark_unverified() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.added_while_unverified := NOT coalesce((SELECT email IS NULL OR email_verified FROM users WHERE id = NEW.user_id), false);
    RETURN NEW;
END $$;

-- Codes by mail: 8 digits, kept only as SHA-256 of the slot's id and the code (`code_hash`), made
-- when the mail is sent (as the links' tokens are, 0009): no table or queue holds a usable code.
-- One live code per address for sign-ins and one per user for reauthentications: a newer one
-- replaces the older. Five wrong codes delete it.
CREATE TABLE email_codes (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    purpose          text NOT NULL CHECK (purpose IN ('sign_in', 'reauthentication')),
    email_normalized text NOT NULL,
    -- NULL: a code for an address no account holds (`--email-code-signup`).
    user_id          uuid REFERENCES users (id) ON DELETE CASCADE,
    code_hash        bytea CHECK (octet_length(code_hash) = 32),
    failures         integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX email_codes_sign_in ON email_codes (email_normalized) WHERE purpose = 'sign_in';
CREATE UNIQUE INDEX email_codes_reauthentication ON email_codes (user_id) WHERE purpose = 'reauthentication';
CREATE INDEX email_codes_expires_at ON email_codes (expires_at);

-- POST /users/signin/email-code writes the same row whether or not the address is registered (as
-- the reset requests do, 0004): a background round turns it into a code's slot and a mail.
CREATE TABLE email_code_requests (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email_normalized text NOT NULL,
    email            text NOT NULL,
    -- Whether an address no account holds gets a code too (`--email-code-signup`).
    signup           boolean NOT NULL,
    lifetime_seconds double precision NOT NULL,
    requested_at     timestamptz NOT NULL
);

-- Turns up to `batch` queued requests into codes' slots and mail (every instance, SKIP LOCKED);
-- returns how many it took. A request older than the address's live code is dropped.
CREATE FUNCTION exo_resolve_email_codes(batch integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    request record;
    owner_id uuid;
    owner_email text;
    owner_firstname text;
    owner_verified boolean;
    slot bigint;
    taken integer := 0;
BEGIN
    FOR request IN SELECT * FROM email_code_requests ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED LOOP
        DELETE FROM email_code_requests WHERE id = request.id;
        taken := taken + 1;
        -- Orders the rounds of several instances for one address (two new codes would collide).
        PERFORM pg_advisory_xact_lock(hashtextextended('exo-email-code:' || request.email_normalized, 0));
        owner_id := NULL;
        SELECT id, email, firstname, email_verified INTO owner_id, owner_email, owner_firstname, owner_verified FROM users
        WHERE email_normalized = request.email_normalized;
        CONTINUE WHEN owner_id IS NULL AND NOT request.signup;
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM email_codes WHERE purpose = 'sign_in' AND email_normalized = request.email_normalized
                AND created_at > request.requested_at);
        DELETE FROM email_codes WHERE purpose = 'sign_in' AND email_normalized = request.email_normalized;
        INSERT INTO email_codes (purpose, email_normalized, user_id, created_at, expires_at)
        VALUES ('sign_in', request.email_normalized, owner_id, request.requested_at,
                request.requested_at + make_interval(secs => request.lifetime_seconds))
        RETURNING id INTO slot;
        INSERT INTO mail_outbox (template, recipient, variables)
        VALUES ('sign_in_code', coalesce(owner_email, request.email),
                jsonb_build_object('codeSlot', slot::text, 'email', coalesce(owner_email, request.email),
                                   'firstname', CASE WHEN owner_verified THEN owner_firstname ELSE '' END));
    END LOOP;
    RETURN taken;
END
$$;

-- How a sign-in was made: a code by mail too.
ALTER TABLE security_events DROP CONSTRAINT security_events_method_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_method_check
    CHECK (method IN ('password', 'passkey', 'apple', 'google', 'email_code'));

-- A second factor's challenge after a code by mail.
ALTER TABLE mfa_challenges DROP CONSTRAINT mfa_challenges_method_check;
ALTER TABLE mfa_challenges ADD CONSTRAINT mfa_challenges_method_check
    CHECK (method IN ('password', 'apple', 'google', 'reset', 'code', 'email_code'));
