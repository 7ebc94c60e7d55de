package digest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/background"
)

// Defaults of Config.
const (
	// DefaultGrace is how long after a boundary a period is closed. A submission is
	// stamped when intake takes it and committed within the accept deadline
	// (outbox.DefaultAcceptTimeout, 2 s) or not at all, so waiting longer than that lets
	// every transaction that began inside the period commit first. One that takes even
	// longer (a spool replay, a released quarantine) is listed by the next digest.
	DefaultGrace = 10 * time.Second
	// DefaultLookback bounds how far back a closer looks for submissions no digest
	// lists: a closer that was down for days still writes each missed period's digest,
	// within this bound.
	DefaultLookback = 7 * 24 * time.Hour
	// retryDelay is the wait after a pass failed (the database is down).
	retryDelay = 30 * time.Second
	// conflictPasses bounds the passes over one route when other closers keep writing the
	// same digests; the next wake-up tries again.
	conflictPasses = 3
)

// Route is one digest route: a form's `notify email ... { digest ... }`.
type Route struct {
	Form     string
	Name     string // the route's name, unique within the form
	Schedule Schedule
	To       []string
	// LinkOnly (content link) lists each submission by time and inbox link only, with
	// none of the visitor's fields.
	LinkOnly bool
	// InboxURL, when set, links each listed submission to its inbox page.
	InboxURL string
	// MaxAttempts is the attempt budget of each digest delivery (already resolved).
	MaxAttempts int
}

// Config configures a Closer.
type Config struct {
	Store  outbox.DigestStore
	Routes []Route
	// Now and After are the clock (default: the real one); tests pass a ManualClock.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Grace and Lookback default to DefaultGrace and DefaultLookback.
	Grace    time.Duration
	Lookback time.Duration
	Logger   *zap.Logger
	// OnCreated is called after a digest was written (the App wakes its worker).
	OnCreated func()
	// LedgerLine, when set, is the lead ledger of form over the UTC days the period
	// [start, end) touches, in one line (outbox.LedgerDay.Summary); the digest carries
	// it. An error leaves the line out and is logged: the digest still goes.
	LedgerLine func(ctx context.Context, form string, start, end time.Time) (string, error)
}

// Closer writes the digests of periods that have closed. Several closers, in one
// process or many, may share a store: the database's unique keys decide which one
// writes each digest (outbox.DigestStore).
type Closer struct {
	cfg   Config
	since map[int]time.Time // per route index, once recorded
	loop  background.Loop
}

// NewCloser returns a closer for cfg's routes; Start runs it.
func NewCloser(cfg Config) *Closer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = DefaultLookback
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Closer{cfg: cfg, since: map[int]time.Time{}}
}

// Start runs the closer until Stop or ctx ends. It does nothing without routes.
func (c *Closer) Start(ctx context.Context) {
	if len(c.cfg.Routes) == 0 {
		return
	}
	c.loop.Start(ctx, background.Config{Now: c.cfg.Now, After: c.cfg.After, Retry: retryDelay, Logger: c.cfg.Logger,
		Failed: "close digest periods; trying again"},
		func(ctx context.Context, now time.Time) (time.Time, error) {
			return c.nextWake(now), c.CloseDue(ctx, now)
		})
}

// Stop ends the loop and waits for it. A digest being written is either committed or
// rolled back: the next closer finds the period open again.
func (c *Closer) Stop() { c.loop.Stop() }

// nextWake is when the next period of any route has closed: its end plus the grace.
func (c *Closer) nextWake(now time.Time) time.Time {
	var next time.Time
	for _, r := range c.cfg.Routes {
		at := r.Schedule.Next(r.Schedule.Start(now.Add(-c.cfg.Grace))).Add(c.cfg.Grace)
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// CloseDue writes the digest of every period of every route that closed by now (minus
// the grace) and has accepted submissions no digest lists yet. With nothing to list it
// costs one query per route. The run loop calls it on each wake-up; tests call it
// directly, never beside a running loop or another CloseDue of the same Closer (several
// Closers may run at once: that is what the database's keys are for).
func (c *Closer) CloseDue(ctx context.Context, now time.Time) error {
	var errs []error
	for i := range c.cfg.Routes {
		if err := c.closeRoute(ctx, i, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Closer) closeRoute(ctx context.Context, i int, now time.Time) error {
	r := c.cfg.Routes[i]
	since, ok := c.since[i]
	if !ok {
		var err error
		// The route's first period is the one holding the moment it was first seen.
		since, err = c.cfg.Store.DigestRouteSince(ctx, r.Form, r.Name, r.Schedule.Start(now))
		if err != nil {
			return err
		}
		c.since[i] = since
	}
	end := r.Schedule.Start(now.Add(-c.cfg.Grace)) // every period before end has closed
	from := end.Add(-c.cfg.Lookback)
	if from.Before(since) {
		from = since
	}
	if !from.Before(end) {
		return nil
	}
	for range conflictPasses {
		done, err := c.pass(ctx, r, from, end, now)
		if err != nil || done {
			return err
		}
	}
	c.cfg.Logger.Info("digest: other closers kept writing this route's digests; trying again at the next period",
		zap.String("form", r.Form), zap.String("route", r.Name))
	return nil
}

// pass lists what no digest of r lists in [from, end) and writes the digests. A
// submission goes to its own period's digest; if that digest exists already (the
// submission committed after it was written), to the last closed period's, or, if that
// exists too, it waits for the next period. done is false when another closer wrote a
// digest first: the caller looks again.
func (c *Closer) pass(ctx context.Context, r Route, from, end, now time.Time) (done bool, err error) {
	items, err := c.cfg.Store.UndigestedSubmissions(ctx, r.Form, r.Name, from, end)
	if err != nil || len(items) == 0 {
		return true, err
	}
	made, err := c.cfg.Store.DigestPeriods(ctx, r.Form, r.Name, r.Schedule.Start(from), end)
	if err != nil {
		return true, err
	}
	exists := map[time.Time]bool{}
	for _, p := range made {
		exists[p] = true
	}
	last := r.Schedule.Start(end.Add(-time.Nanosecond))
	groups := map[time.Time][]outbox.DigestItem{}
	for _, it := range items {
		p := r.Schedule.Start(it.CreatedAt)
		if exists[p] {
			if exists[last] {
				continue
			}
			p = last
		}
		groups[p] = append(groups[p], it)
	}
	periods := make([]time.Time, 0, len(groups))
	for p := range groups {
		periods = append(periods, p)
	}
	sort.Slice(periods, func(i, j int) bool { return periods[i].Before(periods[j]) })
	for _, p := range periods {
		d, deliveries, err := c.build(r, p, groups[p], now, c.ledgerLine(ctx, r, p))
		if err != nil {
			return true, err
		}
		ok, err := c.cfg.Store.CreateDigest(ctx, d, deliveries)
		if err != nil {
			return true, err
		}
		if !ok {
			return false, nil
		}
		c.cfg.Logger.Info("digest written", zap.String("form", r.Form), zap.String("route", r.Name),
			zap.Time("period_start", d.PeriodStart), zap.Int("submissions", len(d.Items)))
		if c.cfg.OnCreated != nil {
			c.cfg.OnCreated()
		}
	}
	return true, nil
}

// ledgerLine is the period's ledger line, "" without one.
func (c *Closer) ledgerLine(ctx context.Context, r Route, p time.Time) string {
	if c.cfg.LedgerLine == nil {
		return ""
	}
	line, err := c.cfg.LedgerLine(ctx, r.Form, p, r.Schedule.Next(p))
	if err != nil {
		c.cfg.Logger.Warn("digest: ledger line left out", zap.String("form", r.Form), zap.String("route", r.Name), zap.Error(err))
		return ""
	}
	return line
}

// build makes the digest of period p listing items, and one delivery per recipient.
func (c *Closer) build(r Route, p time.Time, items []outbox.DigestItem, now time.Time, ledger string) (outbox.Digest, []outbox.Delivery, error) {
	end := r.Schedule.Next(p)
	d := outbox.Digest{Form: r.Form, Route: r.Name, PeriodStart: p, PeriodEnd: end, CreatedAt: now}
	for _, it := range items {
		d.Items = append(d.Items, it.ID)
	}
	data, err := json.Marshal(struct {
		Form        string    `json:"form"`
		Route       string    `json:"route"`
		PeriodStart time.Time `json:"period_start"`
		PeriodEnd   time.Time `json:"period_end"`
		Submissions int       `json:"submissions"`
	}{r.Form, r.Name, p, end, len(items)})
	if err != nil {
		return d, nil, fmt.Errorf("digest event: %w", err)
	}
	d.Event = outbox.Event{Kind: outbox.EventDigestCreated, Data: data, At: now}
	msg, err := render(r, p, end, items, ledger)
	if err != nil {
		return d, nil, err
	}
	deliveries := make([]outbox.Delivery, 0, len(r.To))
	for _, to := range r.To {
		m := msg
		m.To = to
		id, err := uuid.NewV7()
		if err != nil {
			return d, nil, fmt.Errorf("digest delivery id: %w", err)
		}
		deliveries = append(deliveries, outbox.Delivery{
			ID:            id,
			Route:         r.Name,
			Channel:       outbox.ChannelEmail,
			Recipient:     to,
			Status:        outbox.DeliveryPending,
			MaxAttempts:   r.MaxAttempts,
			NextAttemptAt: now,
			Payload:       m.AppendJSON(nil),
			CreatedAt:     now,
			UpdatedAt:     now,
		})
	}
	return d, deliveries, nil
}
