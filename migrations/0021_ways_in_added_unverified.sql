-- A way in added while the account's address was not verified (by whoever registered an address
-- they may not own) goes with the next password reset, which the mailbox's owner does. The flag is
-- set by the database as the row is made, from the account as it is then.
ALTER TABLE passkeys ADD COLUMN added_while_unverified boolean NOT NULL DEFAULT false;
ALTER TABLE identities ADD COLUMN added_while_unverified boolean NOT NULL DEFAULT false;
-- Rows made before: their accounts' addresses now are the best account of then.
UPDATE passkeys p SET added_while_unverified = true FROM users u WHERE u.id = p.user_id AND NOT u.email_verified;
UPDATE identities i SET added_while_unverified = true FROM users u WHERE u.id = i.user_id AND NOT u.email_verified;

CREATE FUNCTION ways_in_mark_unverified() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.added_while_unverified := NOT coalesce((SELECT email_verified FROM users WHERE id = NEW.user_id), false);
    RETURN NEW;
END $$;
CREATE TRIGGER passkeys_mark_unverified BEFORE INSERT ON passkeys FOR EACH ROW EXECUTE FUNCTION ways_in_mark_unverified();
CREATE TRIGGER identities_mark_unverified BEFORE INSERT ON identities FOR EACH ROW EXECUTE FUNCTION ways_in_mark_unverified();
