-- A second factor (issue 39): a TOTP authenticator (RFC 6238) of a user or an administrator, its
-- recovery codes, and the single-use tokens that finish a sign-in that proved one factor.

CREATE TABLE mfa_factors (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id        uuid UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    admin_id       uuid UNIQUE REFERENCES admins (id) ON DELETE CASCADE,
    -- The shared secret (160 bits). The server computes codes from it, so it is kept as it is (as
    -- Supabase and Keycloak keep theirs); it is never shown again after the enrolment.
    secret         bytea NOT NULL CHECK (octet_length(secret) = 20),
    -- NULL while the enrolment waits for its first code; the factor is on from then.
    enabled_at     timestamptz,
    -- The last 30-second step a code was accepted for: a code works once, and no older one after it.
    last_used_step bigint NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(user_id, admin_id) = 1)
);

-- Ten per factor, shown once; only their SHA-256 is kept (80 random bits each). Single use.
CREATE TABLE mfa_recovery_codes (
    factor_id uuid NOT NULL REFERENCES mfa_factors (id) ON DELETE CASCADE,
    code_hash bytea NOT NULL CHECK (octet_length(code_hash) = 32),
    used_at   timestamptz,
    PRIMARY KEY (factor_id, code_hash)
);

-- A sign-in that proved one factor of an account whose second factor is on: its token (kept as
-- SHA-256) is spent by `POST /users/signin/mfa` with a code. Five wrong codes end it. A reset's
-- confirmation keeps the new password's hash here: the reset applies only with the code.
CREATE TABLE mfa_challenges (
    token_hash            bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    factor_id             uuid NOT NULL REFERENCES mfa_factors (id) ON DELETE CASCADE,
    method                text NOT NULL CHECK (method IN ('password', 'apple', 'google', 'reset', 'code')),
    pending_password_hash text,
    failures              integer NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL DEFAULT now(),
    expires_at            timestamptz NOT NULL
);
CREATE INDEX mfa_challenges_expires_at ON mfa_challenges (expires_at);

ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type IN (
    'signed_in', 'sign_in_failed', 'signed_out', 'session_revoked', 'password_changed',
    'password_reset_requested', 'password_reset', 'email_changed', 'email_verified', 'locked_out',
    'data_exported', 'identity_linked', 'identity_unlinked', 'passkey_added', 'passkey_removed',
    'mfa_enabled', 'mfa_disabled', 'recovery_code_used', 'mfa_failed'));
