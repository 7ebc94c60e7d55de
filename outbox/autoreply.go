package outbox

import (
	"crypto/sha256"
	"encoding/hex"
)

// AutoreplyGate is what the store reads from an autoreply delivery's payload to keep
// the rule "at most one reply per address, form and window" (docs/design.md,
// "Autoreplies"): the form, the address's key (AutoreplyKey) and the window, fixed at
// intake like the rest of the payload.
type AutoreplyGate struct {
	Form          string `json:"form"`
	Key           string `json:"key"`
	WindowSeconds int64  `json:"window_seconds"`
}

// AutoreplyKey is the key under which the autoreplies table remembers an address: the
// SHA-256 of the normalised address (NormalizeAddress), in hex, so the table does not
// keep a second copy of the address in clear (the delivery row has it).
func AutoreplyKey(address string) string {
	sum := sha256.Sum256([]byte(NormalizeAddress(address)))
	return hex.EncodeToString(sum[:])
}

// EventAutoreplySkipped records that intake planned no autoreply for a submission that
// would have had one; its data names the route and a reason, never the address.
const EventAutoreplySkipped = "autoreply.skipped"
