-- Thumbnails and placeholders of images (GET /users/me/images/{id}/thumbnail, signed URLs with
-- &size=). Each size and encoding is made once, by a helper process, and kept where its image's
-- bytes are: in `bytes` for the database storage, or in the file
-- <image-dir>/<first two hex digits>/<image id>-<size>.<webp|jpg> (then `bytes` is NULL).
ALTER TABLE images
    ADD COLUMN blurhash text,
    ADD COLUMN dominant_color text CHECK (dominant_color ~ '^#[0-9a-f]{6}$'),
    -- Why no thumbnail can be made (the decoder refused the file, crashed on it or spun), set once
    -- so that later requests are answered without decoding it again.
    ADD COLUMN thumbnail_error text;

CREATE TABLE image_thumbnails (
    image_id     uuid NOT NULL REFERENCES images (id) ON DELETE CASCADE,
    size         integer NOT NULL CHECK (size IN (128, 256, 512, 1024)),
    content_type text NOT NULL CHECK (content_type IN ('image/webp', 'image/jpeg')),
    width        integer NOT NULL CHECK (width > 0),
    height       integer NOT NULL CHECK (height > 0),
    byte_size    integer NOT NULL CHECK (byte_size > 0),
    sha256       bytea NOT NULL CHECK (octet_length(sha256) = 32),
    bytes        bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (image_id, size, content_type)
);
