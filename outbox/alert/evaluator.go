package alert

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Defaults of Config.
const (
	// DefaultInterval is how often the sources are polled. Each poll is a few indexed
	// reads, and a dead delivery is then told within about this long.
	DefaultInterval = 30 * time.Second
	// DefaultRenotify is the window of "still happening" notices: at most one per alert
	// per window, so a condition that lasts a day sends a handful of messages, not one
	// per poll.
	DefaultRenotify = 4 * time.Hour
)

// Config configures an Evaluator.
type Config struct {
	Store   outbox.AlertStore
	Sources []outbox.AlertSource
	Targets []Target
	// Instance names this instance: the alerts of its Local conditions carry it.
	Instance string
	// InboxURL, when set, is linked from every notice.
	InboxURL string
	Interval time.Duration // default DefaultInterval
	Renotify time.Duration // default DefaultRenotify
	// Now and After are the clock (default: the real one); tests pass a ManualClock.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// OnNotice is called after a notice with deliveries was written (the App wakes its
	// worker).
	OnNotice func()
	// OnPass, when set, is called after every pass with what it did (the App keeps the
	// open alerts for the metric).
	OnPass func(Pass)
	Logger *zap.Logger
}

// Pass is what one Evaluate did.
type Pass struct {
	Opened, Still, Resolved int
	// Refreshed counts open alerts whose summary or count changed without a notice due.
	Refreshed int
	// Open is the alerts open after the pass (the metric reads it).
	Open []outbox.Alert
	// listed: Open was read (the store answered).
	listed bool
}

// Evaluator polls the sources and writes the notices. Several evaluators, in one
// process or many, may share a store: its conditional writes decide each notice once.
type Evaluator struct {
	cfg    Config
	mu     sync.Mutex // serializes Evaluate
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// New returns an evaluator for cfg; Start runs it, Evaluate runs one pass.
func New(cfg Config) *Evaluator {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Renotify <= 0 {
		cfg.Renotify = DefaultRenotify
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Evaluator{cfg: cfg}
}

// Start runs a pass every interval until Stop or ctx ends.
func (e *Evaluator) Start(ctx context.Context) {
	ctx, e.cancel = context.WithCancel(ctx)
	e.done = make(chan struct{})
	go e.run(ctx)
}

// Stop ends the loop and waits for it. A notice being written is committed or rolled
// back: the next pass, here or elsewhere, decides it again.
func (e *Evaluator) Stop() {
	e.once.Do(func() {
		if e.cancel != nil {
			e.cancel()
			<-e.done
		}
	})
}

func (e *Evaluator) run(ctx context.Context) {
	defer close(e.done)
	for {
		if _, err := e.Evaluate(ctx); err != nil && ctx.Err() == nil {
			e.cfg.Logger.Warn("alerts: evaluation failed; trying again", zap.Error(err), zap.Duration("in", e.cfg.Interval))
		}
		select {
		case <-ctx.Done():
			return
		case <-e.cfg.After(e.cfg.Interval):
		}
	}
}

// Evaluate polls every source once and writes the notices that follow. A source that
// fails is logged, and no alert is resolved in that pass: its conditions are unknown,
// not gone.
func (e *Evaluator) Evaluate(ctx context.Context) (Pass, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.evaluate(ctx)
	for _, src := range e.cfg.Sources {
		if o, ok := src.(PassObserver); ok {
			o.PassDone(err == nil && p.listed)
		}
	}
	if e.cfg.OnPass != nil && p.listed {
		e.cfg.OnPass(p)
	}
	return p, err
}

func (e *Evaluator) evaluate(ctx context.Context) (Pass, error) {
	now := e.cfg.Now()
	var pass Pass
	conds, complete := e.poll(ctx, now)
	open, err := e.cfg.Store.ListAlerts(ctx, 0)
	if err != nil {
		return pass, fmt.Errorf("alerts: %w", err)
	}
	byKey := make(map[string]outbox.Alert, len(open))
	for _, a := range open {
		byKey[key(a.Kind, a.Key)] = a
	}
	var errs []error
	seen := make(map[string]bool, len(conds))
	for _, c := range conds {
		k := key(c.Kind, c.Key)
		if seen[k] {
			continue // one condition per (kind, key) and pass; the first reported wins
		}
		seen[k] = true
		a, isOpen := byKey[k]
		switch {
		case !isOpen:
			a = e.opened(c, now)
			ok, err := e.record(ctx, outbox.AlertOpened, a, now, time.Time{})
			errs = append(errs, err)
			if ok {
				pass.Opened++
			}
		case !now.Before(a.NotifiedAt.Add(e.cfg.Renotify)):
			a.Summary, a.Affected = c.Summary, c.Affected
			ok, err := e.record(ctx, outbox.AlertStill, a, now, now.Add(-e.cfg.Renotify))
			errs = append(errs, err)
			if ok {
				pass.Still++
			}
		case a.Summary != c.Summary || a.Affected != c.Affected:
			// No notice, but the inbox, the CLI and the next notice show today's count.
			a.Summary, a.Affected = c.Summary, c.Affected
			ok, err := e.cfg.Store.RecordAlert(ctx, outbox.AlertNotice{Notice: outbox.AlertRefreshed, Alert: a, Now: now})
			errs = append(errs, err)
			if ok {
				pass.Refreshed++
			}
		}
	}
	for _, a := range open {
		if seen[key(a.Kind, a.Key)] || !complete || (a.Instance != "" && a.Instance != e.cfg.Instance) {
			continue
		}
		ok, err := e.record(ctx, outbox.AlertResolved, a, now, time.Time{})
		errs = append(errs, err)
		if ok {
			pass.Resolved++
		}
	}
	if pass.Opened+pass.Still+pass.Resolved+pass.Refreshed == 0 {
		pass.Open, pass.listed = open, true
		return pass, errors.Join(errs...)
	}
	pass.Open, err = e.cfg.Store.ListAlerts(ctx, 0)
	pass.listed = err == nil
	errs = append(errs, err)
	return pass, errors.Join(errs...)
}

// poll gathers every source's conditions; complete is false when a source failed.
func (e *Evaluator) poll(ctx context.Context, now time.Time) ([]outbox.AlertCondition, bool) {
	var out []outbox.AlertCondition
	complete := true
	for _, src := range e.cfg.Sources {
		cs, err := src.Conditions(ctx, now)
		if err != nil {
			complete = false
			e.cfg.Logger.Warn("alerts: source failed; nothing is resolved in this pass", zap.String("source", src.Name()), zap.Error(err))
			continue
		}
		out = append(out, cs...)
	}
	return out, complete
}

func (e *Evaluator) opened(c outbox.AlertCondition, now time.Time) outbox.Alert {
	a := outbox.Alert{ID: uuid.Must(uuid.NewV7()), Kind: c.Kind, Key: c.Key, Form: c.Form, Summary: c.Summary,
		Affected: c.Affected, Channel: c.Channel, Destination: c.Destination, OpenedAt: now, NotifiedAt: now}
	if c.Local {
		a.Instance = e.cfg.Instance
	}
	return a
}

// record writes one notice with a delivery per independent target. false: another
// instance decided it first.
func (e *Evaluator) record(ctx context.Context, notice string, a outbox.Alert, now, notifiedBefore time.Time) (bool, error) {
	n := outbox.AlertNotice{Notice: notice, Alert: a, Now: now, NotifiedBefore: notifiedBefore}
	m := describe(notice, a, now, e.cfg.InboxURL)
	for _, t := range e.cfg.Targets {
		if !t.independent(a.Channel, a.Destination) {
			continue
		}
		p, err := payload(t, notice, a, m, now)
		if err != nil {
			return false, fmt.Errorf("alerts: %s %s/%s to %s: %w", notice, a.Kind, a.Key, t.Describe(), err)
		}
		n.Deliveries = append(n.Deliveries, outbox.Delivery{ID: uuid.Must(uuid.NewV7()), Route: t.Route(),
			Channel: t.Channel, Recipient: t.Recipient(), MaxAttempts: t.attempts(), Payload: p.AppendJSON(nil)})
	}
	if len(n.Deliveries) > 0 {
		n.Submission = &outbox.Submission{ID: uuid.Must(uuid.NewV7()), CreatedAt: now, Data: outbox.Fields{
			{Name: "alert", Value: a.ID.String()}, {Name: "notice", Value: notice}, {Name: "kind", Value: a.Kind},
			{Name: "key", Value: a.Key}, {Name: "summary", Value: a.Summary}, {Name: "affected", Value: fmt.Sprint(a.Affected)}}}
	}
	ok, err := e.cfg.Store.RecordAlert(ctx, n)
	if err != nil {
		return false, fmt.Errorf("alerts: %w", err)
	}
	if !ok {
		return false, nil
	}
	log := e.cfg.Logger.Info
	if notice == outbox.AlertOpened {
		log = e.cfg.Logger.Warn
	}
	log("alert "+notice, zap.String("kind", a.Kind), zap.String("key", a.Key), zap.Int("affected", a.Affected),
		zap.Int("deliveries", len(n.Deliveries)))
	if len(n.Deliveries) == 0 && len(e.cfg.Targets) > 0 {
		e.cfg.Logger.Error("alert has no target that is independent of the failing channel; it is recorded and shown, not sent",
			zap.String("kind", a.Kind), zap.String("key", a.Key), zap.String("channel", a.Channel))
	} else if e.cfg.OnNotice != nil {
		e.cfg.OnNotice()
	}
	return true, nil
}

func (t Target) attempts() int {
	switch {
	case t.MaxAttempts > 0:
		return t.MaxAttempts
	case t.Channel == outbox.ChannelEmail:
		return outbox.DefaultEmailAttempts
	}
	return outbox.DefaultWebhookAttempts
}

func key(kind, k string) string { return kind + "\x00" + k }
