-- Throttles that hold under concurrency: an attempt is counted *before* its password is hashed,
-- for every key of the request at once, so that guesses sent together cannot all pass a check
-- made before any of them was recorded. A success gives its attempt back (or clears the key).

-- Counts one attempt on each key whose window still has room, or none when any key is full.
-- Returns 0 when the attempt was counted, else the seconds (at least 1) until the latest of the
-- full keys' windows ends. Keys are locked in sorted order, so that two requests naming the same
-- keys cannot deadlock. A window opens at the first attempt and lasts `windows[i]` seconds.
CREATE FUNCTION exo_throttle_acquire(keys text[], limits integer[], windows double precision[])
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    counted integer;
    started timestamptz;
    wait double precision := 0;
BEGIN
    FOR i IN SELECT k.ordinality FROM unnest(keys) WITH ORDINALITY AS k(key, ordinality) ORDER BY k.key LOOP
        INSERT INTO auth_throttles AS t (key, window_start, failures) VALUES (keys[i], now(), 0)
        ON CONFLICT (key) DO UPDATE SET
            failures = CASE WHEN t.window_start <= now() - make_interval(secs => windows[i]) THEN 0 ELSE t.failures END,
            window_start = CASE WHEN t.window_start <= now() - make_interval(secs => windows[i]) THEN now() ELSE t.window_start END
        RETURNING t.failures, t.window_start INTO counted, started;
        IF counted >= limits[i] THEN
            wait := greatest(wait, 1, ceil(extract(epoch FROM started + make_interval(secs => windows[i]) - now())));
        END IF;
    END LOOP;
    IF wait > 0 THEN
        RETURN wait::integer;
    END IF;
    UPDATE auth_throttles SET failures = failures + 1 WHERE key = ANY (keys);
    RETURN 0;
END
$$;

-- Housekeeping deletes throttle rows whose window has long ended.
CREATE INDEX auth_throttles_window_start ON auth_throttles (window_start);
-- Housekeeping deletes sessions past their absolute end; the idle end moves with every use,
-- so it is found by a scan of the (already filtered) rest.
CREATE INDEX sessions_expires_at ON sessions (expires_at);
