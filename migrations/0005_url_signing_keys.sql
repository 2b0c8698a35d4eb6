-- The keys that sign image URLs (`GET /images/{id}?exp=…&sig=…`), shared by every instance. The
-- newest key signs; every key verifies the URLs it signed until it is deleted, a week after a
-- newer one replaced it (`exosphere keys rotate`), longer than any signed URL lives.
CREATE TABLE url_signing_keys (
    id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    secret     bytea NOT NULL CHECK (octet_length(secret) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- When a newer key took over; NULL for the newest.
    retired_at timestamptz
);
