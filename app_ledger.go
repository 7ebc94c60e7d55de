package formoutbox

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/telemetry"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// ledgerFlushInterval is how often this instance's ledger counts are written
// (outbox/ledger_counter.go): what a kill -9 may lose, always in the direction of fewer
// answers counted, never of a loss shown.
const ledgerFlushInterval = 10 * time.Second

// ledgerState is the App's part of the lead ledger: its counter, the forms whose every
// accepted post must get a delivery (registered by the handlers), the flusher and the
// alert source.
type ledgerState struct {
	counter *outbox.LedgerCounter
	alerts  outbox.AlertSource

	mu      sync.Mutex
	checked map[string]bool // form -> intake.Config.DeliversEveryPost

	stop chan struct{}
	done chan struct{}
}

// provisionLedger builds the counter (keyed by the worker's owner name, unique per
// process and config) and the alert source; it starts nothing.
func (a *App) provisionLedger() {
	a.ledger.counter = outbox.NewLedgerCounter(a.worker.Owner())
	a.ledger.checked = map[string]bool{}
	a.ledger.alerts = outbox.NewLedgerAlertSource(outbox.LedgerAlertConfig{
		Store: a.store, Checked: a.ledgerChecked, Horizon: time.Duration(a.Retention),
	})
	if reg := a.ctx.GetMetricsRegistry(); reg != nil {
		g := telemetry.LedgerMismatchGauge(func() (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conds, err := a.ledger.alerts.Conditions(ctx, time.Now())
			return len(conds), err
		})
		if err := telemetry.RegisterOnce(reg, g); err != nil {
			a.logger.Warn("register ledger metric", zap.Error(err))
		}
	}
}

// registerLedgerForm records whether form's every accepted post must get a delivery
// (handler.go calls it for each form at Provision).
func (a *App) registerLedgerForm(form string, deliversEveryPost bool) {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	a.ledger.checked[form] = deliversEveryPost
	telemetry.LedgerForm(form)
}

func (a *App) ledgerChecked(form string) bool {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	return a.ledger.checked[form]
}

// LedgerAlertSource reports the ledger's mismatches (outbox.AlertLedgerMismatch, one per
// form and UTC day) for the alert evaluator.
func (a *App) LedgerAlertSource() outbox.AlertSource { return a.ledger.alerts }

// ledgerAnswers is what handlers count their answers with: the ledger and the metrics.
type ledgerAnswers struct{ c *outbox.LedgerCounter }

func (l ledgerAnswers) Answered(form string, createdAt time.Time, queued bool) {
	l.c.Answered(form, createdAt, queued)
	telemetry.Answered(form, queued)
}

// ledgerReplayed counts a post the spool's replayer stored (spool.go).
func (a *App) ledgerReplayed(p spool.StoredPost) {
	if p.Test {
		return
	}
	a.ledger.counter.Replayed(p.Form, p.CreatedAt)
	telemetry.Replayed(p.Form)
}

// startLedger flushes the counts every ledgerFlushInterval until stopLedger.
func (a *App) startLedger() {
	a.ledger.stop, a.ledger.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.ledger.done)
		t := time.NewTicker(ledgerFlushInterval)
		defer t.Stop()
		for {
			select {
			case <-a.ledger.stop:
				return
			case <-t.C:
				a.flushLedger()
			}
		}
	}()
}

// stopLedger stops the flusher and writes what is left.
func (a *App) stopLedger() {
	if a.ledger.stop == nil {
		return
	}
	close(a.ledger.stop)
	<-a.ledger.done
	a.flushLedger()
}

func (a *App) flushLedger() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.ledger.counter.Flush(ctx, a.store, time.Now()); err != nil {
		// Kept for the next flush; an unreachable store is reported by health already.
		a.logger.Debug("flush ledger counts", zap.Error(err))
	}
}

// Ledger is the lead ledger of the last days UTC days (the admin API's GET ledger),
// with this instance's counts flushed first so that its latest answers are in it.
func (a *App) Ledger(ctx context.Context, forms []string, days int) (outbox.Ledger, error) {
	a.flushLedger()
	q := a.ledgerQuery()
	q.Days, q.Forms = days, forms
	if inv, ok := a.ledger.alerts.(outbox.LedgerInvalidator); ok {
		inv.Invalidate()
	}
	return outbox.BuildLedger(ctx, a.store, q)
}

// ledgerLine is a digest's ledger line for form over [start, end) (outbox/digest).
func (a *App) ledgerLine(ctx context.Context, form string, start, end time.Time) (string, error) {
	a.flushLedger()
	return outbox.LedgerPeriodSummary(ctx, a.store, a.ledgerQuery(), form, start, end)
}

// ledgerQuery is what the App knows for any ledger it builds.
func (a *App) ledgerQuery() outbox.LedgerQuery {
	return outbox.LedgerQuery{Now: time.Now(), Checked: a.ledgerChecked, Horizon: time.Duration(a.Retention)}
}
