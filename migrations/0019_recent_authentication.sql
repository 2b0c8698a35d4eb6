-- When a session's holder last proved a credential (a sign-in, a registration, a reset
-- confirmation, `POST /users/me/reauthenticate`): the changes of the ways into an account need it
-- to be recent. Sessions opened before this migration proved theirs when they were opened.
ALTER TABLE sessions ADD COLUMN authenticated_at timestamptz;
UPDATE sessions SET authenticated_at = created_at;
ALTER TABLE sessions ALTER COLUMN authenticated_at SET NOT NULL, ALTER COLUMN authenticated_at SET DEFAULT now();

-- A new authentication changes what the session cache holds for the session: every instance
-- drops it (0014's trigger, with the new column).
DROP TRIGGER sessions_invalidate_changed ON sessions;
CREATE TRIGGER sessions_invalidate_changed AFTER UPDATE ON sessions
    FOR EACH ROW WHEN (
        NEW.expires_at IS DISTINCT FROM OLD.expires_at OR NEW.last_seen_at < OLD.last_seen_at
        OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.token_hash IS DISTINCT FROM OLD.token_hash
        OR NEW.authenticated_at IS DISTINCT FROM OLD.authenticated_at)
    EXECUTE FUNCTION sessions_invalidate_changed();
