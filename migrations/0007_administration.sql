-- Administrators: accounts of their own (never users), their sessions, and the record of what
-- they did. `exosphere admin create` makes them; they sign in at POST /admin/signin.
CREATE TABLE admins (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    email            text NOT NULL CHECK (octet_length(email) BETWEEN 3 AND 254),
    email_normalized text NOT NULL UNIQUE,
    -- PHC string, scrypt like users'.
    password_hash    text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- Shorter than users' sessions: idle 1 hour, absolute 12 hours. Deleting an admin ends them.
CREATE TABLE admin_sessions (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    admin_id     uuid NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    -- SHA-256 of the bearer token; the token itself is never stored.
    token_hash   bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX admin_sessions_admin ON admin_sessions (admin_id);

-- Every administrator action: who (the email survives the admin's deletion), what, on whom, from where.
CREATE TABLE admin_audit (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    admin_id       uuid REFERENCES admins (id) ON DELETE SET NULL,
    admin_email    text NOT NULL,
    action         text NOT NULL,
    target_user_id uuid,
    ip_address     text
);

-- A disabled user cannot sign in; disabling also ends every session.
ALTER TABLE users ADD COLUMN disabled_at timestamptz;

-- The admin's user search: newest first with a keyset cursor, email substrings through trigrams,
-- custom-field values through containment (data @> '{"weight": 78}').
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX users_created ON users (created_at DESC, id DESC);
CREATE INDEX users_email_trgm ON users USING gin (email_normalized gin_trgm_ops);
CREATE INDEX users_data ON users USING gin (data jsonb_path_ops);
