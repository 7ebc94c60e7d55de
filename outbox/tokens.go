package outbox

import (
	"context"
	"time"
)

// TokenLedger remembers which single-use spam tokens (the signed time trap's, a proof of
// work's) posts have used, in the store every instance shares, so a token is single use
// across instances (docs/design.md, "Spam signals"). Both stores implement it.
type TokenLedger interface {
	// UseToken records that a post with contentHash used the token id, kept at least
	// until expires (after which the token is refused as expired anyway). It reports
	// whether the use is the token's first, or a repeat by the same content (a client
	// retrying the same post, e.g. the browser client after a timeout): false means
	// another post used it before.
	UseToken(ctx context.Context, id, contentHash string, expires time.Time) (bool, error)
}
