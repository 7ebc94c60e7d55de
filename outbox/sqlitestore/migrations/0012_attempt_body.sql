-- What each attempt sent: the hex SHA-256 of the request body the provider was sent
-- (webhook and chat channels; '' for e-mail, and for attempts recorded before this
-- migration). A release rewrites a held-back submission's webhook body to its new status
-- (outbox/restate.go), so the stored payload alone no longer says which bytes an earlier
-- attempt carried; the hash does, and a receiver can match it against what it got.
ALTER TABLE delivery_attempts ADD COLUMN body_sha256 TEXT NOT NULL DEFAULT '';
