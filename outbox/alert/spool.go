package alert

import (
	"context"
	"fmt"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// SpoolState is what this instance's spool says (outbox/spool.Fallback): how many
// posts wait, since when the oldest, and since when replaying them into the store
// fails. ok is false while there is no spool.
type SpoolState func() (entries int, oldest, failingSince time.Time, ok bool)

// Defaults of the spool sources' thresholds.
const (
	DefaultStoreUnreachable = 5 * time.Minute
	DefaultSpoolBacklog     = 15 * time.Minute
)

// StoreUnreachable is the store_unreachable source: posts are being spooled because
// replaying them into the store has failed for at least after. It is this instance's
// view (Local, keyed by instance). The alert is recorded once the evaluator reaches the
// store: during a full outage nothing can be written, so the notice follows when the
// database answers again while the spool still waits to drain; a shorter outage shows
// in the spool_backlog source, the health answer and the metrics.
func StoreUnreachable(state SpoolState, instance string, after time.Duration) outbox.AlertSource {
	if after <= 0 {
		after = DefaultStoreUnreachable
	}
	return outbox.AlertSourceFunc{SourceName: outbox.AlertStoreUnreachable, Func: func(_ context.Context, now time.Time) ([]outbox.AlertCondition, error) {
		entries, _, since, ok := state()
		if !ok || since.IsZero() || entries == 0 || now.Sub(since) < after {
			return nil, nil
		}
		return []outbox.AlertCondition{{Kind: outbox.AlertStoreUnreachable, Key: instance, Local: true, Since: since,
			Affected: entries,
			Summary:  fmt.Sprintf("the database has not taken spooled posts for %s on instance %s; %d posts wait in the spool", now.Sub(since).Round(time.Second), instance, entries)}}, nil
	}}
}

// SpoolBacklog is the spool_backlog source: the spool still holds a post older than
// after, whatever the reason (the database refuses it, the replayer is stuck).
func SpoolBacklog(state SpoolState, instance string, after time.Duration) outbox.AlertSource {
	if after <= 0 {
		after = DefaultSpoolBacklog
	}
	return outbox.AlertSourceFunc{SourceName: outbox.AlertSpoolBacklog, Func: func(_ context.Context, now time.Time) ([]outbox.AlertCondition, error) {
		entries, oldest, _, ok := state()
		if !ok || entries == 0 || oldest.IsZero() || now.Sub(oldest) < after {
			return nil, nil
		}
		return []outbox.AlertCondition{{Kind: outbox.AlertSpoolBacklog, Key: instance, Local: true, Since: oldest,
			Affected: entries,
			Summary:  fmt.Sprintf("%d posts wait in the spool of instance %s, the oldest for %s", entries, instance, now.Sub(oldest).Round(time.Second))}}, nil
	}}
}
