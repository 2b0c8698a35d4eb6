-- Live changes (GET /users/me/events): what happened to a user's profile and images, numbered per
-- user, kept a few minutes so that a stream resumed with Last-Event-ID misses nothing, and told to
-- the instances by NOTIFY when the change commits. Triggers write them, so that no path that
-- changes a profile or an image (the API, the console, the command line) can forget one.
--
-- Neither is free: PostgreSQL (up to 16 at least) serialises the commits of transactions that
-- NOTIFY, which halved the rate of profile writes in a benchmark, and the event's row costs about
-- a tenth more. So events are kept and notified only for users with a stream open somewhere, or
-- closed less than 10 minutes ago (`live_streams`, kept by the instances); every change still takes
-- its number, so a stream that resumes across a change that was not kept sees the gap and is told
-- to reload (`resync`). Every instance also sweeps its streams' users every few seconds, which
-- bounds the delay of what no notification carried (a change that began before the mark committed).
--
-- The number is taken under the user's row lock, which the change holds until it commits: a
-- user's events commit in the order of their numbers, so "everything after N" never skips one
-- that commits later.
ALTER TABLE users ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;

CREATE TABLE user_events (
    -- No reference to users: an account's last events outlive it by a few minutes, harmlessly.
    user_id    uuid NOT NULL,
    seq        bigint NOT NULL,
    type       text NOT NULL CHECK (type IN ('profile', 'image_added', 'image_deleted')),
    -- The image, for image events.
    object_id  uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, seq)
);
CREATE INDEX user_events_created ON user_events (created_at);

-- Which instance has streams of which user; refreshed by the instance, purged when stale (an
-- instance that died). A stale row only costs a useless notification.
CREATE TABLE live_streams (
    user_id      uuid NOT NULL,
    instance_id  uuid NOT NULL,
    refreshed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, instance_id)
);
CREATE INDEX live_streams_refreshed ON live_streams (refreshed_at);

-- A profile change (every change bumps `version`) takes the next number in the same row version;
-- one BEFORE trigger does all of it (two triggers cost a write twice as much).
CREATE FUNCTION users_record_profile_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.event_seq := OLD.event_seq + 1;
    IF EXISTS (SELECT 1 FROM live_streams WHERE user_id = NEW.id) THEN
        INSERT INTO user_events (user_id, seq, type) VALUES (NEW.id, NEW.event_seq, 'profile');
        PERFORM pg_notify('exosphere_user_events', NEW.id::text);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER users_record_profile_event BEFORE UPDATE ON users
    FOR EACH ROW WHEN (NEW.version IS DISTINCT FROM OLD.version) EXECUTE FUNCTION users_record_profile_event();

-- Images added or deleted take the next numbers by updating their user's row once per statement
-- (which waits for the lock a concurrent change holds); statement-level, so that a statement that
-- inserts many images of one user updates the row once, not once per image (a row updated 100,000
-- times in one transaction took minutes). An account being deleted has no row left: no event.
CREATE FUNCTION images_record_events() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    kind text := CASE TG_OP WHEN 'INSERT' THEN 'image_added' ELSE 'image_deleted' END;
    batch record;
    last bigint;
BEGIN
    FOR batch IN SELECT user_id, array_agg(id ORDER BY id) AS ids FROM changed GROUP BY user_id LOOP
        UPDATE users SET event_seq = event_seq + cardinality(batch.ids) WHERE id = batch.user_id RETURNING event_seq INTO last;
        IF FOUND AND EXISTS (SELECT 1 FROM live_streams WHERE user_id = batch.user_id) THEN
            INSERT INTO user_events (user_id, seq, type, object_id)
                SELECT batch.user_id, last - cardinality(batch.ids) + position, kind, image_id
                FROM unnest(batch.ids) WITH ORDINALITY AS added (image_id, position);
            PERFORM pg_notify('exosphere_user_events', batch.user_id::text);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER images_record_added AFTER INSERT ON images
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION images_record_events();
CREATE TRIGGER images_record_deleted AFTER DELETE ON images
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION images_record_events();

-- A session that ends (sign-out, password change or reset, revocation, disable, deletion) ends
-- its event streams on every instance. Nothing to keep: a stream resumed with that token is refused.
CREATE FUNCTION sessions_notify_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM live_streams WHERE user_id = OLD.user_id) THEN
        PERFORM pg_notify('exosphere_session_ends', OLD.id::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER sessions_notify_end AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION sessions_notify_end();
