-- Images in an S3-compatible object store (issue 41): a third storage, and the durable queue of
-- objects to remove. A deleted image's objects are queued in the transaction that deletes its row,
-- so that a store that is down when the row goes loses nothing: every instance retries the queue.

ALTER TABLE images DROP CONSTRAINT images_storage_check;
ALTER TABLE images ADD CONSTRAINT images_storage_check CHECK (storage IN ('database', 'filesystem', 's3'));

CREATE TABLE image_object_deletions (
    -- The object's key in the deployment's bucket, prefix included.
    key             text PRIMARY KEY,
    enqueued_at     timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX image_object_deletions_due ON image_object_deletions (next_attempt_at);
