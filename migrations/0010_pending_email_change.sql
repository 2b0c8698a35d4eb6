-- An email change waits for proof (../shared/API.md, "Changing the email address"): the new
-- address is kept beside the current one until a link mailed to it comes back. Sign-in, resets and
-- mail keep using `email` meanwhile. A pending change lives 24 hours; a newer one replaces it.
ALTER TABLE users ADD COLUMN pending_email text, ADD COLUMN pending_email_expires_at timestamptz;

-- Two more purposes of mailed tokens: the confirmation sent to the new address (bound to it by
-- `email_normalized`), and the undo link sent to the old one once the change applied (bound to the
-- address it restores; `email` keeps that address as it was written).
ALTER TABLE account_tokens DROP CONSTRAINT account_tokens_purpose_check;
ALTER TABLE account_tokens ADD CONSTRAINT account_tokens_purpose_check
    CHECK (purpose IN ('password_reset', 'email_verification', 'email_change', 'email_change_undo'));
ALTER TABLE account_tokens ADD COLUMN email text;
