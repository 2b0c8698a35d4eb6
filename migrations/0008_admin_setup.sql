-- The first administrator, created in the browser: a server with no administrator prints a
-- one-time link at start (/console/#setup=<token>). Only the token's SHA-256 is kept; it lasts an
-- hour and is consumed by its use, and creating the first administrator deletes every other.
CREATE TABLE admin_setup_tokens (
    token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
