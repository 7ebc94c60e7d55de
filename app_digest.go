package formoutbox

import (
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox/digest"
)

// digestState holds the digest routes the form handlers register while they are
// provisioned, and the closer that Start runs beside the worker (docs/design.md,
// "Digests").
type digestState struct {
	mu     sync.Mutex
	routes []digest.Route
	seen   map[string]bool // form + "\x00" + route
	closer *digest.Closer
}

// registerDigests adds a form's digest routes. A (form, route) registered twice, by two
// handlers naming the same form, is refused: one digest per period could not say whose
// recipients it was for.
func (a *App) registerDigests(routes []digest.Route) error {
	a.digests.mu.Lock()
	defer a.digests.mu.Unlock()
	for _, r := range routes {
		key := r.Form + "\x00" + r.Name
		if a.digests.seen[key] {
			return fmt.Errorf("form_outbox: form %s: digest route %s is configured twice (two form_outbox handlers with one form name)", r.Form, r.Name)
		}
		if a.digests.seen == nil {
			a.digests.seen = map[string]bool{}
		}
		a.digests.seen[key] = true
		a.digests.routes = append(a.digests.routes, r)
	}
	return nil
}

// startDigests starts the closer when there are digest routes and this instance runs
// the worker: with `worker off` another instance closes the periods.
func (a *App) startDigests() {
	a.digests.mu.Lock()
	defer a.digests.mu.Unlock()
	if len(a.digests.routes) == 0 || a.WorkerOff() {
		return
	}
	a.digests.closer = digest.NewCloser(digest.Config{
		Store:      a.store,
		Routes:     a.digests.routes,
		Logger:     a.logger.Named("digest"),
		OnCreated:  a.worker.Wake,
		LedgerLine: a.ledgerLine,
	})
	a.digests.closer.Start(a.ctx)
	a.logger.Info("digests on", zap.Int("routes", len(a.digests.routes)))
}

func (a *App) stopDigests() {
	a.digests.mu.Lock()
	c := a.digests.closer
	a.digests.mu.Unlock()
	if c != nil {
		c.Stop()
	}
}
