package formoutbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/canary"
)

// canaryState holds the canaries the form handlers register while they are provisioned,
// and the scheduler that Start runs beside the worker (docs/design.md, "Canary").
type canaryState struct {
	mu        sync.Mutex
	forms     []canary.Form
	seen      map[string]bool
	scheduler *canary.Scheduler
}

// registerCanary adds a form's canary: its own `canary` option, else the global
// default, unless it is off. A form whose only routes are digests has nothing a canary
// could check: with its own option that is an error, with the default it is skipped.
// One form name with a canary in two handlers is refused: both would plan the one
// canary of each period (canary.RunID), and one handler's routes would go unchecked.
func (a *App) registerCanary(cfg *intake.Config) error {
	c, own := cfg.Canary, cfg.Canary != nil
	if !own {
		c = a.Canary
	}
	if c == nil || c.Off {
		return nil
	}
	routes := cfg.CanaryRoutes()
	if len(routes) == 0 {
		if own {
			return fmt.Errorf("form_outbox: form %s: canary: the form has no route a canary can check (digest routes are periodic)", cfg.Form)
		}
		return nil
	}
	a.canaries.mu.Lock()
	defer a.canaries.mu.Unlock()
	if a.canaries.seen[cfg.Form] {
		return fmt.Errorf("form_outbox: form %s: a canary is configured twice (two form_outbox handlers with one form name)", cfg.Form)
	}
	if a.canaries.seen == nil {
		a.canaries.seen = map[string]bool{}
	}
	a.canaries.seen[cfg.Form] = true
	every := time.Duration(c.Every)
	a.canaries.forms = append(a.canaries.forms, canary.Form{Name: cfg.Form, Every: every,
		Deadline: canary.Deadline(every, time.Duration(c.Deadline)), Routes: routes, Plan: cfg.PlanCanary})
	return nil
}

// startCanaries starts the scheduler when a form has a canary and this instance runs
// the worker: with `worker off` another instance sends the canaries.
func (a *App) startCanaries() {
	a.canaries.mu.Lock()
	defer a.canaries.mu.Unlock()
	if len(a.canaries.forms) == 0 || a.WorkerOff() {
		return
	}
	a.canaries.scheduler = canary.New(canary.Config{
		Store:  a.store,
		Forms:  a.canaries.forms,
		Logger: a.logger.Named("canary"),
		OnRun:  a.worker.Wake,
	})
	a.canaries.scheduler.Start(a.ctx)
	a.logger.Info("canaries on", zap.Int("forms", len(a.canaries.forms)))
}

func (a *App) stopCanaries() {
	a.canaries.mu.Lock()
	s := a.canaries.scheduler
	a.canaries.mu.Unlock()
	if s != nil {
		s.Stop()
	}
}

// CanaryAlertSource reports a canary_failed condition per configured form and route
// whose last canary failed (canary.AlertSource); the alert evaluator polls it. It may
// be taken before the form handlers are provisioned: each poll reads the canaries
// registered by then.
func (a *App) CanaryAlertSource() outbox.AlertSource {
	return outbox.AlertSourceFunc{SourceName: "canary", Func: func(ctx context.Context, now time.Time) ([]outbox.AlertCondition, error) {
		a.canaries.mu.Lock()
		forms := a.canaries.forms
		a.canaries.mu.Unlock()
		if len(forms) == 0 {
			return nil, nil
		}
		return canary.AlertSource(a.store, forms).Conditions(ctx, now)
	}}
}

// canaryResults are the last verdicts of the configured forms' canary routes, for the
// health body and the inbox: a route removed from the config is left out.
func (a *App) canaryResults(ctx context.Context) ([]outbox.CanaryResult, error) {
	a.canaries.mu.Lock()
	watched := map[string]bool{}
	for _, f := range a.canaries.forms {
		for _, r := range f.Routes {
			watched[f.Name+"\x00"+r] = true
		}
	}
	a.canaries.mu.Unlock()
	if len(watched) == 0 {
		return nil, nil
	}
	all, err := a.store.CanaryResults(ctx)
	if err != nil {
		return nil, err
	}
	var out []outbox.CanaryResult
	for _, r := range all {
		if watched[r.Form+"\x00"+r.Route] {
			out = append(out, r)
		}
	}
	return out, nil
}
