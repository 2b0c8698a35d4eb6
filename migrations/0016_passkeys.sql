-- Passkeys (WebAuthn): a user's credentials, found at sign-in by the credential id the
-- authenticator returns (discoverable credentials: no email first).
CREATE TABLE passkeys (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id   bytea NOT NULL UNIQUE CHECK (octet_length(credential_id) BETWEEN 16 AND 1023),
    -- The COSE key as the authenticator gave it (ES256 or RS256).
    public_key      bytea NOT NULL CHECK (octet_length(public_key) <= 2048),
    -- The authenticator's signature counter; 0 for those that keep none.
    sign_count      bigint NOT NULL DEFAULT 0,
    name            text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    aaguid          bytea,
    -- How the client may reach the authenticator (hybrid, internal, usb, …), comma-separated.
    transports      text NOT NULL DEFAULT '' CHECK (octet_length(transports) <= 200),
    backup_eligible boolean NOT NULL DEFAULT false,
    backed_up       boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz
);
CREATE INDEX passkeys_user ON passkeys (user_id);

-- Challenges handed out for a ceremony: single use (deleted when used), 5 minutes. Only their
-- SHA-256 is kept. A registration's belongs to its user; a sign-in's to nobody yet.
CREATE TABLE webauthn_challenges (
    challenge_hash bytea PRIMARY KEY CHECK (octet_length(challenge_hash) = 32),
    purpose        text NOT NULL CHECK (purpose IN ('registration', 'authentication')),
    user_id        uuid REFERENCES users (id) ON DELETE CASCADE,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges (expires_at);

ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type IN (
    'signed_in', 'sign_in_failed', 'signed_out', 'session_revoked', 'password_changed',
    'password_reset_requested', 'password_reset', 'email_changed', 'email_verified', 'locked_out',
    'data_exported', 'identity_linked', 'identity_unlinked', 'passkey_added', 'passkey_removed'));

-- How a sign-in was made (`signed_in` events): password, passkey, apple or google.
ALTER TABLE security_events ADD COLUMN method text CHECK (method IN ('password', 'passkey', 'apple', 'google'));
