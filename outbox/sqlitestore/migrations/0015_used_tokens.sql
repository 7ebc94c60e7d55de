-- Single-use spam tokens (outbox.TokenLedger; docs/design.md, "Spam signals"): the signed
-- time trap's and the proof of work's ids, with the content hash of the post that first
-- used them (a retry of that same post is not a reuse). expires_at (Unix microseconds)
-- is when the token stops being accepted anyway; the pruner deletes rows past it.
CREATE TABLE used_tokens (
	id           TEXT NOT NULL PRIMARY KEY,
	content_hash TEXT NOT NULL,
	expires_at   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX used_tokens_expires ON used_tokens (expires_at);
