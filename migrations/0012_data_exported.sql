-- An export of everything a user holds (GET /users/me/export) is a security event of its own.
ALTER TABLE security_events DROP CONSTRAINT security_events_type_check;
ALTER TABLE security_events ADD CONSTRAINT security_events_type_check CHECK (type IN (
    'signed_in', 'sign_in_failed', 'signed_out', 'session_revoked', 'password_changed',
    'password_reset_requested', 'password_reset', 'email_changed', 'email_verified', 'locked_out',
    'data_exported'));
