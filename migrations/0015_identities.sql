-- Sign in with Apple and Google: an account is found by the provider's subject (`sub`), never by
-- its email alone. One provider's subject belongs to one account; an account may hold several.
CREATE TABLE identities (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider     text NOT NULL CHECK (provider IN ('apple', 'google')),
    subject      text NOT NULL CHECK (octet_length(subject) BETWEEN 1 AND 255),
    -- The address the provider gave when the identity was linked (for the user and the console).
    email        text CHECK (octet_length(email) <= 254),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    UNIQUE (provider, subject)
);
CREATE INDEX identities_user ON identities (user_id);

-- An account made by a provider's sign-in has no password: `password_hash` holds '!', which no
-- PHC string is, so no password ever verifies against it (`UserRepository.noPassword`). A reset
-- by mail gives the account one.
COMMENT ON COLUMN users.password_hash IS 'PHC string, or ! for an account without a password';

-- Linking and unlinking an identity are security events of the user's.
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type IN (
    'signed_in', 'sign_in_failed', 'signed_out', 'session_revoked', 'password_changed',
    'password_reset_requested', 'password_reset', 'email_changed', 'email_verified', 'locked_out',
    'data_exported', 'identity_linked', 'identity_unlinked'));
