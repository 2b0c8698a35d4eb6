-- The server passes the time it reads from its clock (`WallClock`) instead of leaving it to
-- now(), so that a test can move time instead of waiting for it. The functions that read the
-- time take it as a last argument; the old signatures stay, as wrappers passing now().

-- `exo_throttle_acquire` (migration 0003), at the time `at_time`.
CREATE FUNCTION exo_throttle_acquire(keys text[], limits integer[], windows double precision[], at_time timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    counted integer;
    started timestamptz;
    wait double precision := 0;
BEGIN
    FOR i IN SELECT k.ordinality FROM unnest(keys) WITH ORDINALITY AS k(key, ordinality) ORDER BY k.key LOOP
        INSERT INTO auth_throttles AS t (key, window_start, failures) VALUES (keys[i], at_time, 0)
        ON CONFLICT (key) DO UPDATE SET
            failures = CASE WHEN t.window_start <= at_time - make_interval(secs => windows[i]) THEN 0 ELSE t.failures END,
            window_start = CASE WHEN t.window_start <= at_time - make_interval(secs => windows[i]) THEN at_time ELSE t.window_start END
        RETURNING t.failures, t.window_start INTO counted, started;
        IF counted >= limits[i] THEN
            wait := greatest(wait, 1, ceil(extract(epoch FROM started + make_interval(secs => windows[i]) - at_time)));
        END IF;
    END LOOP;
    IF wait > 0 THEN
        RETURN wait::integer;
    END IF;
    UPDATE auth_throttles SET failures = failures + 1 WHERE key = ANY (keys);
    RETURN 0;
END
$$;

CREATE OR REPLACE FUNCTION exo_throttle_acquire(keys text[], limits integer[], windows double precision[])
RETURNS integer
LANGUAGE sql AS $$
    SELECT exo_throttle_acquire(keys, limits, windows, now())
$$;

-- `exo_request_password_reset` (migration 0009), at the time `at_time`: the request is counted and
-- queued at it, and its token expires its lifetime after it.
CREATE FUNCTION exo_request_password_reset(
    email_key text, lifetime double precision,
    keys text[], limits integer[], windows double precision[], address text, agent text, at_time timestamptz)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    wait integer;
BEGIN
    wait := exo_throttle_acquire(keys, limits, windows, at_time);
    IF wait > 0 THEN
        RETURN wait;
    END IF;
    INSERT INTO password_reset_requests (email_normalized, lifetime_seconds, client_address, client_agent, requested_at)
    VALUES (email_key, lifetime, address, agent, at_time);
    RETURN 0;
END
$$;

CREATE OR REPLACE FUNCTION exo_request_password_reset(
    email_key text, lifetime double precision,
    keys text[], limits integer[], windows double precision[], address text, agent text)
RETURNS integer
LANGUAGE sql AS $$
    SELECT exo_request_password_reset(email_key, lifetime, keys, limits, windows, address, agent, now())
$$;
