-- name: PruneAutoreplies
-- Windows that closed before the prune's cutoff (docs/design.md, "Autoreplies"): such a
-- row no longer holds any reply back. One batch, oldest first.
DELETE FROM autoreplies WHERE (form, address_key) IN (
	SELECT form, address_key FROM autoreplies WHERE until_at < ?1 ORDER BY until_at LIMIT ?2)

-- name: EraseAutoreplies
-- An erased submission's window (its reply's row) goes with it: the key is derived from
-- the visitor's address.
DELETE FROM autoreplies WHERE delivery_id IN (SELECT id FROM deliveries WHERE submission_id = ?)
