-- Autoreplies (docs/design.md, "Autoreplies"): at most one reply per address, form and
-- window. One row per form and address key (outbox.AutoreplyKey: a hash, the address
-- itself stays in the delivery row only); until_at is when that address may be replied
-- to again, delivery_id the reply that took the window (no foreign key: the window
-- outlives a pruned or erased submission). Times are Unix microseconds, like every
-- table here.
CREATE TABLE autoreplies (
	form        TEXT NOT NULL,
	address_key TEXT NOT NULL,
	replied_at  INTEGER NOT NULL,
	until_at    INTEGER NOT NULL,
	delivery_id TEXT NOT NULL,
	PRIMARY KEY (form, address_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX autoreplies_until ON autoreplies (until_at);

-- The rule is kept where the delivery row is written, in the transaction that writes
-- it, whichever statement does (an accept of one submission or of a batch, a spool
-- replay): an autoreply that would be due now is dropped (RAISE(IGNORE) skips the row,
-- and only it) when its address is suppressed or was replied to within the window;
-- otherwise the window starts again at its creation. The window and key come from the
-- payload intake planned (outbox.AutoreplyGate).
CREATE TRIGGER deliveries_autoreply_insert BEFORE INSERT ON deliveries
	WHEN NEW.channel = 'autoreply' AND NEW.status = 'pending'
BEGIN
	SELECT RAISE(IGNORE)
		WHERE EXISTS (SELECT 1 FROM suppressions WHERE address = NEW.recipient)
		OR EXISTS (SELECT 1 FROM autoreplies
			WHERE form = json_extract(NEW.payload, '$.autoreply.form')
			AND address_key = json_extract(NEW.payload, '$.autoreply.key')
			AND until_at > NEW.created_at);
	REPLACE INTO autoreplies (form, address_key, replied_at, until_at, delivery_id)
		VALUES (json_extract(NEW.payload, '$.autoreply.form'), json_extract(NEW.payload, '$.autoreply.key'),
			NEW.created_at, NEW.created_at + json_extract(NEW.payload, '$.autoreply.window_seconds') * 1000000, NEW.id);
END;

-- A released submission's autoreply (skipped -> pending) is held to the same rule at
-- the time of the release (the update's updated_at); one that loses stays skipped. A
-- reply that took the window itself (accepted, marked spam before it was sent, then
-- released) takes it again.
CREATE TRIGGER deliveries_autoreply_release BEFORE UPDATE OF status ON deliveries
	WHEN NEW.channel = 'autoreply' AND OLD.status = 'skipped' AND NEW.status = 'pending'
BEGIN
	SELECT RAISE(IGNORE)
		WHERE EXISTS (SELECT 1 FROM suppressions WHERE address = NEW.recipient)
		OR EXISTS (SELECT 1 FROM autoreplies
			WHERE form = json_extract(NEW.payload, '$.autoreply.form')
			AND address_key = json_extract(NEW.payload, '$.autoreply.key')
			AND until_at > NEW.updated_at AND delivery_id <> NEW.id);
	REPLACE INTO autoreplies (form, address_key, replied_at, until_at, delivery_id)
		VALUES (json_extract(NEW.payload, '$.autoreply.form'), json_extract(NEW.payload, '$.autoreply.key'),
			NEW.updated_at, NEW.updated_at + json_extract(NEW.payload, '$.autoreply.window_seconds') * 1000000, NEW.id);
END;
