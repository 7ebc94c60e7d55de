package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// healthTimeout bounds the storage checks of one health request: a hung database must
// answer 503 quickly, not hang the load balancer's probe.
const healthTimeout = 2 * time.Second

// staleTicks is how many poll intervals may pass without a worker pass before health
// reports the worker stuck.
const staleTicks = 3

// WorkerState is what health reads of the delivery worker (*outbox.Worker has it).
type WorkerState interface {
	Running() bool
	Owner() string
	LastTick() time.Time
}

// HealthProbe is what CheckHealth looks at; the root package's App fills it.
type HealthProbe struct {
	Store outbox.Store
	// Driver names the database kind ("sqlite", "postgres").
	Driver string
	// Explain turns a failed ping into the operator's diagnosis (wrong host, password...).
	Explain func(error) string
	Worker  WorkerState
	// WorkerDisabled is `worker off`: a worker that never runs is then no problem.
	WorkerDisabled bool
	PollInterval   time.Duration
	// Spool reports the spool's part; it is read after the storage checks.
	Spool func() SpoolHealth
	// Stats, when set, keeps the numbers read here for the next /metrics scrape.
	Stats *LiveStats
	// Backup, when set, reports the off-host backup (backup.go); nil without one.
	Backup func() *BackupHealth
	// Canary, when set, reads the last canary verdicts of the configured routes.
	Canary func(ctx context.Context) ([]outbox.CanaryResult, error)
}

// CheckHealth checks storage (ping latency), the worker (alive and passing at least every
// staleTicks poll intervals) and reads the live outbox numbers. Any problem makes the
// status "unhealthy", which GET /form_outbox/health answers with 503.
func CheckHealth(ctx context.Context, p HealthProbe) Health {
	h := Health{Status: "ok", Storage: StorageHealth{Driver: p.Driver}}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()

	start := time.Now()
	err := p.Store.Ping(ctx)
	h.Storage.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		h.Storage.Error = p.Explain(err)
		h.Problems = append(h.Problems, "storage unreachable")
	} else {
		h.Storage.Reachable = true
		now := time.Now()
		st, err := p.Store.Stats(ctx, now)
		if err != nil {
			h.Storage.Reachable = false
			h.Storage.Error = err.Error()
			h.Problems = append(h.Problems, "storage unreachable")
		} else {
			p.Stats.Remember(st)
			h.Outbox = &OutboxHealth{
				Backlog: st.Backlog, Due: st.Due, Dead: st.Dead,
				OldestDueSeconds: st.OldestDueAge(now).Seconds(),
			}
			if h.Canary, err = canaryHealth(ctx, p.Canary); err != nil {
				h.Problems = append(h.Problems, "storage unreachable")
				h.Storage.Reachable, h.Storage.Error = false, err.Error()
			}
		}
	}

	h.Worker = WorkerHealth{Disabled: p.WorkerDisabled, Running: p.Worker.Running(), Owner: p.Worker.Owner(), PollIntervalSeconds: p.PollInterval.Seconds()}
	if last := p.Worker.LastTick(); !last.IsZero() {
		h.Worker.LastTick = &last
		h.Worker.SinceLastTickSecs = time.Since(last).Seconds()
	}
	switch {
	case h.Worker.Disabled:
	case !h.Worker.Running:
		h.Problems = append(h.Problems, "worker not running")
	case h.Worker.LastTick == nil || time.Since(*h.Worker.LastTick) > staleTicks*p.PollInterval:
		h.Problems = append(h.Problems, "worker has not polled within 3 poll intervals")
	}

	sh := p.Spool()
	h.Spool = &sh
	if !sh.Healthy {
		h.Problems = append(h.Problems, "spool cannot take submissions: "+sh.Error)
	}
	if p.Backup != nil {
		h.Backup = p.Backup()
	}
	if len(h.Problems) > 0 {
		h.Status = "unhealthy"
	}
	return h
}

// canaryHealth is the canary's part of the health answer.
func canaryHealth(ctx context.Context, read func(context.Context) ([]outbox.CanaryResult, error)) ([]CanaryHealth, error) {
	if read == nil {
		return nil, nil
	}
	rs, err := read(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CanaryHealth, 0, len(rs))
	for _, r := range rs {
		c := CanaryHealth{Form: r.Form, Route: r.Route, Channel: string(r.Channel), Passed: r.Passed,
			Error: r.Error, At: r.At.UTC(), PeriodStart: r.PeriodStart.UTC()}
		if !r.FailingSince.IsZero() {
			since := r.FailingSince.UTC()
			c.FailingSince = &since
		}
		out = append(out, c)
	}
	return out, nil
}

// SpoolHealthFor is the spool's part of the health answer: depth and age of what waits
// for the database. A nil spool is one that is off or not open yet, which is no problem.
func SpoolHealthFor(s *spool.Spool) SpoolHealth {
	if s == nil {
		return SpoolHealth{Healthy: true}
	}
	return SpoolHealthOf(s.Stats(), s.OldestAge())
}

// SpoolHealthOf judges a spool's stats. A non-empty spool is not unhealthy by itself (the
// storage check reports the outage); a spool whose last append failed is: until an append
// succeeds again, a submission the store cannot take is answered 503.
func SpoolHealthOf(st spool.Stats, oldestAge time.Duration) SpoolHealth {
	h := SpoolHealth{Enabled: true, Depth: int64(st.Entries), OldestAgeSeconds: oldestAge.Seconds(), Healthy: true}
	if st.AppendError != "" {
		h.Healthy = false
		h.Error = fmt.Sprintf("the last append failed at %s: %s", st.AppendErrorAt.UTC().Format(time.RFC3339), st.AppendError)
	}
	return h
}

func serveHealth(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	h := b.Health(r.Context())
	status := http.StatusOK
	if h.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, status, h)
}
