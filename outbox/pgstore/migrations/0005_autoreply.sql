-- Autoreplies (docs/design.md, "Autoreplies"): at most one reply per address, form and
-- window. One row per form and address key (outbox.AutoreplyKey: a hash, the address
-- itself stays in the delivery row only); until_at is when that address may be replied
-- to again, delivery_id the reply that took the window (no foreign key: the window
-- outlives a pruned or erased submission).
CREATE TABLE autoreplies (
	form        text NOT NULL,
	address_key text NOT NULL,
	replied_at  timestamptz NOT NULL,
	until_at    timestamptz NOT NULL,
	delivery_id uuid NOT NULL,
	PRIMARY KEY (form, address_key)
);

CREATE INDEX autoreplies_until ON autoreplies (until_at);

-- The rule is kept where the delivery row is written, in the transaction that writes
-- it, whichever statement does (the set-based batch accept, the pipelined one, a spool
-- replay, a release): an autoreply that would be due is dropped (the trigger returns
-- NULL, which skips that row only) when its address is suppressed or was replied to
-- within the window; otherwise the window starts again. The upsert is the decision:
-- a concurrent transaction claiming the same key waits for this one's row, then finds
-- its window open and updates nothing, so two instances racing still make one reply.
-- The window and key come from the payload intake planned (outbox.AutoreplyGate); the
-- time is the row's creation (insert) or the release's updated_at (update). A reply
-- that took the window itself (accepted, marked spam before it was sent, then released)
-- takes it again.
CREATE FUNCTION form_outbox_autoreply_gate() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	gate json := NEW.payload -> 'autoreply';
	at timestamptz := CASE WHEN TG_OP = 'INSERT' THEN NEW.created_at ELSE NEW.updated_at END;
BEGIN
	IF EXISTS (SELECT 1 FROM suppressions WHERE address = NEW.recipient) THEN
		RETURN NULL;
	END IF;
	INSERT INTO autoreplies AS a (form, address_key, replied_at, until_at, delivery_id)
		VALUES (gate ->> 'form', gate ->> 'key', at,
			at + make_interval(secs => (gate ->> 'window_seconds')::double precision), NEW.id)
		ON CONFLICT (form, address_key) DO UPDATE
			SET replied_at = EXCLUDED.replied_at, until_at = EXCLUDED.until_at, delivery_id = EXCLUDED.delivery_id
			WHERE a.until_at <= EXCLUDED.replied_at OR a.delivery_id = EXCLUDED.delivery_id;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER deliveries_autoreply_insert BEFORE INSERT ON deliveries FOR EACH ROW
	WHEN (NEW.channel = 'autoreply' AND NEW.status = 'pending')
	EXECUTE FUNCTION form_outbox_autoreply_gate();

CREATE TRIGGER deliveries_autoreply_release BEFORE UPDATE OF status ON deliveries FOR EACH ROW
	WHEN (NEW.channel = 'autoreply' AND OLD.status = 'skipped' AND NEW.status = 'pending')
	EXECUTE FUNCTION form_outbox_autoreply_gate();
