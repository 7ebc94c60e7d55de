// Package claimorder puts claimed deliveries in claim order for both stores: RETURNING
// gives no order guarantee, and callers get the order the claim query picked them in.
package claimorder

import (
	"bytes"
	"slices"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Sort orders ds as the claim queries do: next_attempt_at, then id. Comparing the id's
// bytes is the order of both stores' id columns (PostgreSQL's uuid, SQLite's lower-case
// hex text) without formatting a string per comparison on the claim path.
func Sort(ds []outbox.Delivery) {
	slices.SortFunc(ds, func(a, b outbox.Delivery) int {
		if c := a.NextAttemptAt.Compare(b.NextAttemptAt); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
}
