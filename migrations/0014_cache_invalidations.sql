-- The session and profile caches of the instances (`SessionCache`): every change that can alter
-- what a token's lookup reads (a user's row updated or deleted, a session ended, or changed other
-- than by its `last_seen_at` moving on) writes the user's id here, in its own transaction. Every
-- instance reads what committed since its last read every few milliseconds, by snapshot
-- (`pg_current_snapshot()`): rows whose transaction was not visible to the last read's snapshot
-- and is visible to this one's. Nothing is missed however transactions interleave, no `NOTIFY`
-- serialises commits, and it works through a pooler in transaction mode. Rows are deleted by the
-- instances once older than their longest gap between reads (an instance with a longer gap empties
-- its cache).
CREATE TABLE cache_invalidations (
    -- The writing transaction: the readers compare it with their snapshots.
    xid     xid8 NOT NULL DEFAULT pg_current_xact_id(),
    user_id uuid NOT NULL
);
CREATE INDEX cache_invalidations_xid ON cache_invalidations (xid);

-- One BEFORE trigger on users (a second one costs a write more): every update now records the
-- user, and a profile change also takes its event number as before (0013).
DROP TRIGGER users_record_profile_event ON users;
CREATE OR REPLACE FUNCTION users_record_profile_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.version IS DISTINCT FROM OLD.version THEN
        NEW.event_seq := OLD.event_seq + 1;
        IF EXISTS (SELECT 1 FROM live_streams WHERE user_id = NEW.id) THEN
            INSERT INTO user_events (user_id, seq, type) VALUES (NEW.id, NEW.event_seq, 'profile');
            PERFORM pg_notify('exosphere_user_events', NEW.id::text);
        END IF;
    END IF;
    INSERT INTO cache_invalidations (user_id) VALUES (NEW.id);
    RETURN NEW;
END $$;
CREATE TRIGGER users_record_profile_event BEFORE UPDATE ON users
    FOR EACH ROW EXECUTE FUNCTION users_record_profile_event();

CREATE FUNCTION users_invalidate_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cache_invalidations (user_id) VALUES (OLD.id);
    RETURN NULL;
END $$;
CREATE TRIGGER users_invalidate_deleted AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_invalidate_deleted();

-- A session that ends (sign-out, password change or reset, revocation, disable, deletion, expiry
-- purged) records its user, and still ends its event streams (0013).
CREATE OR REPLACE FUNCTION sessions_notify_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cache_invalidations (user_id) VALUES (OLD.user_id);
    IF EXISTS (SELECT 1 FROM live_streams WHERE user_id = OLD.user_id) THEN
        PERFORM pg_notify('exosphere_session_ends', OLD.id::text);
    END IF;
    RETURN NULL;
END $$;

-- A session changed other than by use (`last_seen_at` moving on, written in the background):
-- its end moved, or it moved back in time (an operator's fix, a test).
CREATE FUNCTION sessions_invalidate_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cache_invalidations (user_id) VALUES (OLD.user_id), (NEW.user_id);
    RETURN NULL;
END $$;
CREATE TRIGGER sessions_invalidate_changed AFTER UPDATE ON sessions
    FOR EACH ROW WHEN (
        NEW.expires_at IS DISTINCT FROM OLD.expires_at OR NEW.last_seen_at < OLD.last_seen_at
        OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.token_hash IS DISTINCT FROM OLD.token_hash)
    EXECUTE FUNCTION sessions_invalidate_changed();
