// Package canary sends each form's canary: once per period, a synthetic test submission
// planned through every route of the form, whose deliveries the worker sends like any
// other; the scheduler then judges each route by its provider's answer and keeps the
// verdict in the store, where the inbox, `caddy form-outbox status`, the health endpoint
// and the alert source (alertsource.go) read it (docs/design.md, "Canary"). It knows
// nothing of Caddy: the App starts a Scheduler beside the worker (app_canary.go).
package canary

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/background"
)

// Limits and defaults of a form's canary (docs/caddyfile.md, "canary").
const (
	// MinEvery is the shortest period: each canary is a message to every recipient of
	// every route, so a shorter one would be spam to the people it checks on.
	MinEvery = 5 * time.Minute
	// DefaultDeadline is how long a route's deliveries have to be sent, unless the
	// period is shorter (see Deadline).
	DefaultDeadline = 15 * time.Minute
	// MinDeadline is the shortest deadline: a send takes a few seconds at best.
	MinDeadline = 10 * time.Second
	// retryDelay is the wait after a pass failed (the database is down).
	retryDelay = 30 * time.Second
	// maxCheck bounds the wait between two looks at an open run's deliveries: one
	// indexed read of a few rows, only while a run waits for its verdicts.
	maxCheck = 5 * time.Second
)

// Check refuses a period shorter than MinEvery, and a deadline (0: the default) shorter
// than MinDeadline or longer than the period.
func Check(every, deadline time.Duration) error {
	if every < MinEvery {
		return fmt.Errorf("canary every %s: the period is at least %s (each canary is a message to every recipient of every route)", every, MinEvery)
	}
	if deadline != 0 && (deadline < MinDeadline || deadline > every) {
		return fmt.Errorf("canary deadline %s: want at least %s and at most the period, %s", deadline, MinDeadline, every)
	}
	return nil
}

// Deadline is the deadline a form's canary gets: the configured one, else
// DefaultDeadline, and never longer than the period (a run's verdicts are reached
// before the next run starts).
func Deadline(every, configured time.Duration) time.Duration {
	d := configured
	if d <= 0 {
		d = DefaultDeadline
	}
	return min(d, every)
}

// Form is one form's canary.
type Form struct {
	Name string
	// Every is the period; runs start at multiples of it since the Unix epoch (UTC).
	Every time.Duration
	// Deadline is how long after a run starts its routes have to be sent (already
	// resolved by Deadline).
	Deadline time.Duration
	// Routes names the routes a canary checks (intake.Config.CanaryRoutes); the alert
	// source reports only these, so a route removed from the config stops alerting.
	Routes []string
	// Plan makes the canary submission with id, created at now, and its deliveries
	// (intake.Config.PlanCanary).
	Plan func(id uuid.UUID, now time.Time) (*outbox.Submission, []outbox.Delivery, error)
}

// Store is what a Scheduler needs of the store.
type Store interface {
	outbox.BatchAccepter
	outbox.CanaryStore
	ListDeliveries(ctx context.Context, submissionID uuid.UUID) ([]outbox.Delivery, error)
}

// Config configures a Scheduler.
type Config struct {
	Store Store
	Forms []Form
	// Now and After are the loop's clock (default: the real one); tests pass a
	// ManualClock's.
	Now    func() time.Time
	After  func(time.Duration) <-chan time.Time
	Logger *zap.Logger
	// OnRun is called after a canary was stored (the App wakes its worker).
	OnRun func()
}

// Scheduler runs the canaries of its forms. Several schedulers, in one process or many,
// may share a store: the canary's id (RunID) and the store's keys decide which one
// stores each run and each verdict, so every period has one canary and every route one
// verdict on it.
type Scheduler struct {
	cfg   Config
	state []formState // per form of cfg.Forms
	loop  background.Loop
}

// formState is what a scheduler knows of a form's last run.
type formState struct {
	run    outbox.CanaryRun
	known  bool // run is the last one this scheduler saw
	judged bool // every route of run has its verdict
}

// New returns a scheduler of cfg's forms; Start runs it.
func New(cfg Config) *Scheduler {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	for i := range cfg.Forms {
		cfg.Forms[i].Deadline = Deadline(cfg.Forms[i].Every, cfg.Forms[i].Deadline)
	}
	return &Scheduler{cfg: cfg, state: make([]formState, len(cfg.Forms))}
}

// Start runs the scheduler until Stop or ctx ends. It does nothing without forms.
func (s *Scheduler) Start(ctx context.Context) {
	if len(s.cfg.Forms) == 0 {
		return
	}
	s.loop.Start(ctx, background.Config{Now: s.cfg.Now, After: s.cfg.After, Retry: retryDelay, Logger: s.cfg.Logger,
		Failed: "canary: pass failed; trying again"},
		func(ctx context.Context, now time.Time) (time.Time, error) {
			err := s.RunDue(ctx, now)
			return s.nextWake(now), err
		})
}

// Stop ends the loop and waits for it. A canary being stored is committed or not; the
// next scheduler finds its period's run missing and stores it under the same id.
func (s *Scheduler) Stop() { s.loop.Stop() }

// nextWake is the next period start of any form, or sooner the next look at a run that
// waits for verdicts. Between runs the scheduler makes no query.
func (s *Scheduler) nextWake(now time.Time) time.Time {
	var next time.Time
	for i, f := range s.cfg.Forms {
		at := outbox.FloorUnix(now, f.Every).Add(f.Every)
		if st := s.state[i]; st.known && !st.judged {
			at = now.Add(checkEvery(f))
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// checkEvery is how often an open run's deliveries are looked at: often enough that a
// verdict follows its delivery within seconds, a sixtieth of the deadline at most.
func checkEvery(f Form) time.Duration {
	return min(max(f.Deadline/60, time.Second), maxCheck)
}

// RunDue stores the canary of every form whose current period has none yet, and judges
// each form's last run. The run loop calls it on each wake-up; tests call it directly,
// never beside a running loop or another RunDue of the same Scheduler (several
// Schedulers may run at once: that is what the store's keys are for).
func (s *Scheduler) RunDue(ctx context.Context, now time.Time) error {
	var errs []error
	for i := range s.cfg.Forms {
		if err := s.runForm(ctx, i, now); err != nil {
			errs = append(errs, fmt.Errorf("canary of form %s: %w", s.cfg.Forms[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Scheduler) runForm(ctx context.Context, i int, now time.Time) error {
	f, st := s.cfg.Forms[i], &s.state[i]
	start := outbox.FloorUnix(now, f.Every)
	if !st.known || st.run.PeriodStart.Before(start) {
		// Another scheduler may have run this period already, or this one before a
		// restart.
		run, err := s.cfg.Store.LastCanaryRun(ctx, f.Name)
		switch {
		case errors.Is(err, outbox.ErrNotFound):
		case err != nil:
			return err
		case !st.known || !run.PeriodStart.Equal(st.run.PeriodStart):
			*st = formState{run: run, known: true}
		}
	}
	if st.known && !st.judged && st.run.PeriodStart.Before(start) {
		// The last run's time is up (its deadline ends by the next period at the
		// latest): what it has not sent fails now.
		if err := s.judge(ctx, f, st, now); err != nil {
			return err
		}
	}
	if !st.known || st.run.PeriodStart.Before(start) {
		if err := s.start(ctx, f, st, start, now); err != nil {
			return err
		}
	}
	if !st.judged {
		return s.judge(ctx, f, st, now)
	}
	return nil
}

// start stores the canary of the period beginning at start, then records its run. Both
// writes are idempotent (RunID, the run's key), so a scheduler that failed between the
// two, or lost a race to another one, only repeats them.
func (s *Scheduler) start(ctx context.Context, f Form, st *formState, start, now time.Time) error {
	id := RunID(f.Name, start)
	sub, deliveries, err := f.Plan(id, now)
	if err != nil {
		return err
	}
	res, err := outbox.AcceptOne(ctx, s.cfg.Store, sub, deliveries)
	if err != nil {
		return err
	}
	run := outbox.CanaryRun{Form: f.Name, PeriodStart: start, SubmissionID: id, CreatedAt: now}
	if _, err := s.cfg.Store.RecordCanaryRun(ctx, run); err != nil {
		return err
	}
	*st = formState{run: run, known: true}
	if res.Duplicate {
		return nil
	}
	s.cfg.Logger.Info("canary sent", zap.String("form", f.Name), zap.String("id", id.String()),
		zap.Time("period_start", start), zap.Int("deliveries", len(deliveries)))
	if s.cfg.OnRun != nil {
		s.cfg.OnRun()
	}
	return nil
}

// judge records the verdict of every route of the form's last run that has one now.
func (s *Scheduler) judge(ctx context.Context, f Form, st *formState, now time.Time) error {
	deliveries, err := s.cfg.Store.ListDeliveries(ctx, st.run.SubmissionID)
	if err != nil {
		return err
	}
	// A run's deliveries have the deadline from when it was stored, and at most until
	// the next run is due: then what is unsent fails.
	due, next := st.run.CreatedAt.Add(f.Deadline), st.run.PeriodStart.Add(f.Every)
	if next.Before(due) {
		due = next
	}
	decided, open := verdicts(st.run, deliveries, now, due, "within "+f.Deadline.String())
	for _, r := range decided {
		fresh, err := s.cfg.Store.RecordCanaryResult(ctx, r)
		if err != nil {
			return err
		}
		if !fresh {
			continue // another scheduler judged it first
		}
		if r.Passed {
			s.cfg.Logger.Info("canary passed", zap.String("form", r.Form), zap.String("route", r.Route))
		} else {
			// The error may quote a recipient, as a dead delivery's may: the log keeps to
			// names and ids, the store (status, health, the inbox) has the rest.
			s.cfg.Logger.Warn("canary failed", zap.String("form", r.Form), zap.String("route", r.Route),
				zap.String("channel", string(r.Channel)), zap.String("id", r.SubmissionID.String()))
		}
	}
	st.judged = open == 0
	return nil
}
