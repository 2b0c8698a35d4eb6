-- Each way in added (a passkey, a linked identity) mails the account's verified address a link
-- that removes it and ends every session (7 days, single use): its slot names the way in it
-- removes, by kind and id (issue 38).
ALTER TABLE account_tokens
    ADD COLUMN target_kind text CHECK (target_kind IN ('passkey', 'identity')),
    ADD COLUMN target_id uuid,
    ADD CONSTRAINT account_tokens_target CHECK ((target_kind IS NULL) = (target_id IS NULL));
ALTER TABLE account_tokens DROP CONSTRAINT account_tokens_purpose_check;
ALTER TABLE account_tokens ADD CONSTRAINT account_tokens_purpose_check
    CHECK (purpose IN ('password_reset', 'email_verification', 'email_change', 'email_change_undo', 'sign_in_method_removal'));

-- A reset mail goes to whoever asks for it, to an address that may be unverified: the account's
-- first name, text its registrant chose (a stranger, perhaps), goes only to a verified address.
CREATE OR REPLACE FUNCTION exo_resolve_password_resets(batch integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    request record;
    found_user record;
    slot bigint;
    taken integer := 0;
BEGIN
    FOR request IN SELECT * FROM password_reset_requests ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED LOOP
        DELETE FROM password_reset_requests WHERE id = request.id;
        taken := taken + 1;
        -- The row lock orders the rounds of several instances for one user.
        SELECT id, email, firstname, email_verified INTO found_user FROM users
        WHERE email_normalized = request.email_normalized FOR NO KEY UPDATE;
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN EXISTS (
            SELECT 1 FROM account_tokens WHERE user_id = found_user.id AND purpose = 'password_reset' AND created_at > request.requested_at);
        DELETE FROM account_tokens WHERE user_id = found_user.id AND purpose = 'password_reset';
        INSERT INTO account_tokens (token_hash, user_id, purpose, created_at, expires_at)
        VALUES (NULL, found_user.id, 'password_reset', request.requested_at,
                request.requested_at + make_interval(secs => request.lifetime_seconds))
        RETURNING id INTO slot;
        INSERT INTO mail_outbox (template, recipient, variables)
        VALUES ('password_reset', found_user.email,
                jsonb_build_object('tokenSlot', slot::text, 'email', found_user.email,
                                   'firstname', CASE WHEN found_user.email_verified THEN found_user.firstname ELSE '' END));
        INSERT INTO security_events (user_id, type, at, ip_address, user_agent)
        VALUES (found_user.id, 'password_reset_requested', request.requested_at, request.client_address, request.client_agent);
    END LOOP;
    RETURN taken;
END
$$;
