-- Users' images: metadata in `images`; the bytes either in `image_data` (database storage) or in
-- a file named after the image's id under the deployment's image directory (filesystem storage).

CREATE TABLE images (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    content_type text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/heic')),
    byte_size    bigint NOT NULL CHECK (byte_size > 0),
    sha256       bytea NOT NULL CHECK (octet_length(sha256) = 32),
    width        integer NOT NULL CHECK (width > 0),
    height       integer NOT NULL CHECK (height > 0),
    -- Where the bytes are: a row of image_data, or the file <image-dir>/<first two hex digits>/<id>.
    storage      text NOT NULL CHECK (storage IN ('database', 'filesystem')),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- The listing: a user's images oldest first, paged by (created_at, id).
CREATE INDEX images_user_created ON images (user_id, created_at, id);
-- `exosphere images migrate` walks the images still in the other storage.
CREATE INDEX images_storage ON images (storage, created_at, id);

CREATE TABLE image_data (
    image_id uuid PRIMARY KEY REFERENCES images (id) ON DELETE CASCADE,
    bytes    bytea NOT NULL
);
-- Images are compressed already: store the bytes out of line uncompressed, which also lets a
-- Range request read only the chunks it needs (substring on an uncompressed TOAST value).
ALTER TABLE image_data ALTER COLUMN bytes SET STORAGE EXTERNAL;
