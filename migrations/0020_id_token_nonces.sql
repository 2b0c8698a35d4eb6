-- ID tokens proven fresh: the nonces this server handed out (`POST /users/signin/nonce`, single
-- use, 5 minutes), and the tokens it accepted, refused again on every instance until they expire.
-- Both by SHA-256 only: neither table holds a value anyone could use.
CREATE TABLE id_token_nonces (
    nonce_hash bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX id_token_nonces_expires_at ON id_token_nonces (expires_at);

CREATE TABLE used_id_tokens (
    token_hash bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX used_id_tokens_expires_at ON used_id_tokens (expires_at);
