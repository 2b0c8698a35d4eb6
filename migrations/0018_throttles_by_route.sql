-- Throttles are counted by the API's route table before a route's handler runs
-- (`exo_throttle_acquire`), so a reset request no longer counts and queues in one function: it
-- queues with a plain INSERT. The combined function goes.
DROP FUNCTION exo_request_password_reset(text, double precision, text[], integer[], double precision[], text, text, timestamptz);
DROP FUNCTION exo_request_password_reset(text, double precision, text[], integer[], double precision[], text, text);
