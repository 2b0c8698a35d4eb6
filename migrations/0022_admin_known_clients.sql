-- Where each administrator signed in from successfully: client addresses and device cookies, each
-- kept as the SHA-256 of "address:<ip>" or "device:<token>" (a device's token is a secret, never
-- stored). A sign-in from one of them in the last 90 days is not held by the per-email counter,
-- which strangers can fill from many addresses; they are still slowed by it (issue 38).
CREATE TABLE admin_known_clients (
    admin_id          uuid NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    client_hash       bytea NOT NULL CHECK (octet_length(client_hash) = 32),
    last_signed_in_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (admin_id, client_hash)
);
