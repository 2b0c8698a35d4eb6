-- Users, their custom field types, sessions and sign-in throttles.

CREATE TABLE users (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- As the user typed it (trimmed); the unique login identity is its lowercase form.
    email            text NOT NULL CHECK (octet_length(email) BETWEEN 3 AND 254),
    email_normalized text NOT NULL UNIQUE,
    -- PHC string: $scrypt$ln=17,r=8,p=1$salt$hash
    password_hash    text NOT NULL,
    firstname        text NOT NULL DEFAULT '',
    lastname         text NOT NULL DEFAULT '',
    data             jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(data) = 'object'),
    email_verified   boolean NOT NULL DEFAULT false,
    -- Incremented by every change; the ETag is derived from it.
    version          bigint NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- One type per custom field for the whole deployment, fixed by configuration or first write.
CREATE TABLE field_types (
    name       text PRIMARY KEY CHECK (name ~ '^[A-Za-z][A-Za-z0-9_]{0,63}$'),
    type       text NOT NULL CHECK (type IN ('string', 'integer', 'double', 'boolean', 'date', 'datetime')),
    pinned     boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sessions (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- SHA-256 of the bearer token; the token itself is never stored.
    token_hash   bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- The absolute end of the session; the idle end is last_seen_at + the idle timeout.
    expires_at   timestamptz NOT NULL,
    user_agent   text
);
CREATE INDEX sessions_user_id ON sessions (user_id, created_at);

-- Failure counters shared by every instance: sign-in per email and per client address,
-- password checks per user. A window opens at the first failure.
CREATE TABLE auth_throttles (
    key          text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    failures     integer NOT NULL
);
