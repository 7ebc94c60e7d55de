-- Only accepted and spam submissions bind their idempotency key (outbox/idempotency.go):
-- a refused (quarantined) post must not swallow the visitor's corrected retry with the
-- same key. A refused row keeps its key in unbound_key, outside the unique (form,
-- idempotency_key) constraint, so it stays visible for audit. Rows refused before this
-- migration release their keys the same way.
ALTER TABLE submissions ADD COLUMN unbound_key text;

UPDATE submissions SET unbound_key = idempotency_key, idempotency_key = NULL
WHERE status = 'quarantined' AND idempotency_key IS NOT NULL;
