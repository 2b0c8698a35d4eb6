-- A session ended or a profile edited by an administrator appears in the user's activity as the
-- administrator's doing, without the operator's address or device (those are in admin_audit).
ALTER TABLE security_events ADD COLUMN by_administrator boolean NOT NULL DEFAULT false;
