package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// SuppressionGuard is a Sender that refuses email to suppressed addresses before any
// provider is called. The check runs just before sending rather than at intake: a
// suppression added while a delivery waits for a retry still applies, and the handler's
// hot path reads nothing extra. A suppressed delivery is recorded as a permanent attempt
// with error code "suppressed", which makes it dead like any permanent error: visible,
// counted, and retryable by hand once the address is removed from the list.
type SuppressionGuard struct {
	Next Sender
	// List returns the suppression list, or nil while no store is open. It is a
	// function because the App opens its store after building its Sender.
	List func() FeedbackStore
}

// ErrSuppressed is the cause carried by a suppressed delivery's permanent error.
var ErrSuppressed = errors.New("recipient is on the suppression list")

// Send implements Sender.
func (g SuppressionGuard) Send(ctx context.Context, d Delivery) (providers.Result, error) {
	if d.Channel.IsEmail() && g.List != nil {
		if list := g.List(); list != nil {
			suppressed, err := list.IsSuppressed(ctx, d.Recipient)
			if err != nil {
				return providers.Result{}, &providers.Error{Class: providers.Temporary, Code: "suppression_check",
					Err: fmt.Errorf("check suppression list: %w", err)}
			}
			if suppressed {
				return providers.Result{}, &providers.Error{Class: providers.Permanent, Code: ReasonSuppressed, Err: ErrSuppressed}
			}
		}
	}
	return g.Next.Send(ctx, d)
}

var _ Sender = SuppressionGuard{}
