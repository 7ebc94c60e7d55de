package formoutbox

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// healthTimeout bounds the storage checks of one health request: a hung database must
// answer 503 quickly, not hang the load balancer's probe.
const healthTimeout = 2 * time.Second

// staleTicks is how many poll intervals may pass without a worker pass before health
// reports the worker stuck.
const staleTicks = 3

// Health is the body of GET /form_outbox/health (internal/adminapi/views.go).
type Health = adminapi.Health

// SpoolHealth is the spool's part of the health body.
type SpoolHealth = adminapi.SpoolHealth

type (
	storageHealth = adminapi.StorageHealth
	workerHealth  = adminapi.WorkerHealth
	outboxHealth  = adminapi.OutboxHealth
)

// health checks storage (ping latency), the worker (alive and passing at least every
// staleTicks poll intervals) and reads the live outbox numbers.
func (a *App) health(ctx context.Context) Health {
	h := Health{Status: "ok", Storage: storageHealth{Driver: a.storage.Driver}}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()

	start := time.Now()
	err := a.store.Ping(ctx)
	h.Storage.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		h.Storage.Error = a.storageError(err)
		h.Problems = append(h.Problems, "storage unreachable")
	} else {
		h.Storage.Reachable = true
		if o, ok := a.store.(outbox.Ops); ok {
			now := time.Now()
			st, err := o.Stats(ctx, now)
			if err != nil {
				h.Storage.Reachable = false
				h.Storage.Error = err.Error()
				h.Problems = append(h.Problems, "storage unreachable")
			} else {
				a.metrics.rememberStats(st, now)
				h.Outbox = &outboxHealth{
					Backlog: st.Backlog, Due: st.Due, Dead: st.Dead,
					OldestDueSeconds: st.OldestDueAge(now).Seconds(),
				}
			}
		}
	}

	poll := a.worker.PollInterval()
	h.Worker = workerHealth{Disabled: a.workerDisabled(), Running: a.worker.Running(), Owner: a.worker.Owner(), PollIntervalSeconds: poll.Seconds()}
	if last := a.worker.LastTick(); !last.IsZero() {
		h.Worker.LastTick = &last
		h.Worker.SinceLastTickSecs = time.Since(last).Seconds()
	}
	switch {
	case h.Worker.Disabled:
	case !h.Worker.Running:
		h.Problems = append(h.Problems, "worker not running")
	case h.Worker.LastTick == nil || time.Since(*h.Worker.LastTick) > staleTicks*poll:
		h.Problems = append(h.Problems, "worker has not polled within 3 poll intervals")
	}

	sh := a.spoolHealth()
	h.Spool = &sh
	if !sh.Healthy {
		h.Problems = append(h.Problems, "spool cannot take submissions: "+sh.Error)
	}
	if len(h.Problems) > 0 {
		h.Status = "unhealthy"
	}
	return h
}

func serveHealth(a *App, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	h := a.health(r.Context())
	status := http.StatusOK
	if h.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, status, h)
}
