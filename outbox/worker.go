package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Worker defaults (docs/design.md, 'Worker'; the options that override them are in
// docs/caddyfile.md, 'Global options').
const (
	DefaultConcurrency     = 64
	DefaultBatch           = 100
	DefaultLease           = 2 * time.Minute
	DefaultPacedHold       = time.Second
	DefaultPollInterval    = 15 * time.Second
	DefaultShutdownGrace   = 10 * time.Second
	DefaultEmailAttempts   = 8
	DefaultWebhookAttempts = 10
)

// storeTimeout bounds every store write the worker makes outside a send, so that a hung
// database cannot hang Stop forever.
const storeTimeout = 10 * time.Second

// maxErrorText bounds the error text stored with an attempt; provider error bodies can be
// large and the history only needs the gist.
const maxErrorText = 2000

// WorkerConfig configures a Worker. Zero values mean the documented defaults.
type WorkerConfig struct {
	Store  Store
	Sender Sender
	// Owner is stored in lease_owner so an operator can tell which process holds a lease.
	// Default: hostname-pid-random, unique per Worker so that the old and new workers of a
	// config reload are told apart.
	Owner string
	// Concurrency is the maximum number of sends in flight. Default 64: a send mostly
	// waits on the network, and a claim never takes more rows than there are free slots,
	// so with 8 (the default before) each claim, a commit of its own, leased at most 8
	// rows while intake committed up to 64 submissions per transaction, and the backlog
	// grew under load (bench/RESULTS.md, 'End to end').
	Concurrency int
	// Batch is the most rows one claim takes. Default 100. A claim never takes more rows
	// than there are free send slots, so claimed rows never wait in memory while their
	// lease runs down; and while sends are in flight, the worker claims again only once
	// three quarters of a batch of slots is free, so that under load each claim (one
	// transaction and one commit) leases many rows rather than the one slot that just freed.
	Batch int
	// Lease is how long a claim (and each renewal) holds a delivery. Default 2m.
	Lease time.Duration
	// PollInterval is the tick: the correctness path when no notification arrives.
	// Default 15s.
	PollInterval time.Duration
	// ShutdownGrace is how long Stop lets in-flight sends finish before cancelling them
	// and releasing their leases. Default 10s. Measured on the wall clock, not Now/After.
	ShutdownGrace time.Duration
	Retry         RetryPolicy
	// Now and After are the clock; tests inject a ManualClock. Defaults time.Now and
	// time.After. After drives the tick and lease renewals.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// ProcessClock makes the worker use Now as it is, even on a store that has a clock of
	// its own (a DatabaseClock: PostgreSQL), where by default Now only measures elapsed
	// time and the database's clock says what time it is (dbclock.go). It is for tests
	// whose ManualClock sets absolute times, e.g. one instance running ahead of another.
	ProcessClock bool
	Logger       *zap.Logger
	// Notifications makes the worker listen for (and Broadcast send) cross-process
	// wake-ups when the store implements Notifier. They only accelerate: the tick still
	// delivers everything with them off.
	Notifications bool
	// OnDead is called after a delivery was recorded dead (for metrics and Caddy events).
	OnDead func(Delivery)
	// OnAttempt is called after each attempt was recorded (for metrics).
	OnAttempt func(Delivery, Attempt)
	// Pacer, when set, is asked before each send whether the delivery's rate allows it
	// now; one it refuses is given back to the store, due later, without holding a send
	// slot (docs/design.md, "Pacing").
	Pacer Pacer
	// PacedHold is the longest wait for its slot that a refused delivery waits out in the
	// worker, on its lease and send slot, instead of going back to the store: a backlog
	// drained at the rate then keeps the rate even when each claim comes back later than
	// the rate's interval (a loaded machine), where a claim per send would set the pace.
	// At most a quarter of Concurrency sends wait so. Default 1s; negative: never held.
	PacedHold time.Duration
	// Parking says when destinations that keep failing are parked and how they are
	// probed (parkpolicy.go, parking.go).
	Parking ParkPolicy
	// OnPark is called when this worker parked a destination (reason: why, never
	// visitor data); OnUnpark when it unparked one, with the deliveries resumed; OnHold
	// when it held a delivery of a parked destination (metrics).
	OnPark   func(dest Destination, reason string)
	OnUnpark func(key string, resumed int)
	OnHold   func(d Delivery, dest Destination)
	// OnPass is called at the end of each claim pass with the number of deliveries it
	// claimed (their sends may still be running): a test signal.
	OnPass func(claimed int)
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.Owner == "" {
		c.Owner = defaultOwner()
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.PacedHold == 0 {
		c.PacedHold = DefaultPacedHold
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	c.Retry = c.Retry.withDefaults()
	c.Parking = c.Parking.withDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.After == nil {
		c.After = time.After
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Worker delivers due deliveries: it claims them in batches under a lease, sends each
// through its Sender with bounded concurrency, renews the lease while a send runs and
// records the outcome with a write fenced by the lease token. Any number of Workers, in
// one process or many, may share a store: the claim hands each row to one of them, and a
// worker that loses its lease (it paused, another reclaimed) writes nothing more.
//
// A Worker starts no goroutine before Start and cannot be restarted after Stop; a config
// reload makes a new one.
type Worker struct {
	cfg      WorkerConfig
	log      *zap.Logger
	notifier Notifier

	wake  chan struct{} // capacity 1: wake-ups coalesce
	slots chan struct{} // one token per send in flight
	freed chan struct{} // capacity 1: a send gave its slot back
	// records holds one token per finished send whose outcome is being written:
	// recordsPerSlot per send slot (see worker_delivery.go).
	records chan struct{}

	mu          sync.Mutex
	state       int // workerNew, workerRunning, workerStopped
	stopLoop    context.CancelFunc
	sendCtx     context.Context
	cancelSends context.CancelFunc
	loopDone    chan struct{}
	listenDone  chan struct{}
	stopDone    chan struct{}

	inflight    sync.WaitGroup
	completions batcher[Completion, error] // see completebatch.go
	// aborted is set when the shutdown grace ran out: a send that then fails was cut
	// short by us, so its lease is released rather than an attempt charged.
	aborted  atomic.Bool
	running  atomic.Bool
	lastTick atomic.Int64 // unix nanoseconds of the last pass, by cfg.Now
	// clock is cfg.Now moved onto the database's clock (dbclock.go): every time the
	// worker writes to or compares with the store comes from it.
	clock *dbClock
	// paced holds the times (cfg.Now's) at which deliveries deferred by the Pacer come
	// due, so the loop wakes for them (pacing.go), under pacedMu.
	pacedMu sync.Mutex
	paced   timeHeap
	// held counts the refused deliveries waiting out a short wait in memory (pacing.go).
	held atomic.Int64
	// parked is the copy of the parked destinations, health the failure counts that
	// park them (parking.go, parkpolicy.go).
	parked parkedSet
	health healthBook
}

const (
	workerNew = iota
	workerRunning
	workerStopped
)

// NewWorker returns a Worker with cfg's defaults applied. It does not start it.
func NewWorker(cfg WorkerConfig) *Worker {
	cfg = cfg.withDefaults()
	w := &Worker{
		cfg:      cfg,
		log:      cfg.Logger.With(zap.String("owner", cfg.Owner)),
		wake:     make(chan struct{}, 1),
		slots:    make(chan struct{}, cfg.Concurrency),
		freed:    make(chan struct{}, 1),
		records:  make(chan struct{}, recordsPerSlot*cfg.Concurrency),
		stopDone: make(chan struct{}),
	}
	w.clock = &dbClock{now: cfg.Now, log: w.log}
	w.health.policy = cfg.Parking
	if dc, ok := cfg.Store.(DatabaseClock); ok && !cfg.ProcessClock {
		w.clock.store = dc
	}
	if cfg.Notifications {
		if n, ok := cfg.Store.(Notifier); ok {
			w.notifier = n
		}
	}
	return w
}

// Owner is the lease owner this worker writes.
func (w *Worker) Owner() string { return w.cfg.Owner }

// PollInterval is the worker's tick, its default applied: health judges a stuck worker
// by it, and must not recompute the default.
func (w *Worker) PollInterval() time.Duration { return w.cfg.PollInterval }

// Start launches the worker and returns at once; the first pass looks for due work
// immediately. ctx carries values only: the worker runs until Stop.
func (w *Worker) Start(ctx context.Context) error {
	if w.cfg.Store == nil || w.cfg.Sender == nil {
		return errors.New("start outbox worker: Store and Sender are required")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case workerRunning:
		return errors.New("start outbox worker: already started")
	case workerStopped:
		return errors.New("start outbox worker: stopped workers cannot be restarted")
	}
	w.state = workerRunning
	base := context.WithoutCancel(ctx)
	loopCtx, stopLoop := context.WithCancel(base)
	w.stopLoop = stopLoop
	w.sendCtx, w.cancelSends = context.WithCancel(base)
	w.loopDone = make(chan struct{})
	// Start counts as the first tick: the loop's first pass follows at once, but a health
	// check between Start and that pass (a loaded machine has not scheduled the goroutine
	// yet) must not read "never polled" as a stuck worker. One that never gets to its
	// first pass is reported all the same, three poll intervals on.
	w.lastTick.Store(w.cfg.Now().UnixNano())
	w.running.Store(true)
	go w.loop(loopCtx)
	if w.notifier != nil {
		w.listenDone = make(chan struct{})
		go w.listen(loopCtx)
	}
	w.log.Info("outbox worker started",
		zap.Int("concurrency", w.cfg.Concurrency),
		zap.Duration("lease", w.cfg.Lease),
		zap.Duration("poll_interval", w.cfg.PollInterval),
		zap.Bool("notifications", w.notifier != nil))
	return nil
}

// Wake asks the worker to look for due work now. It never blocks, and wake-ups that
// arrive while one is pending coalesce into one pass.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Broadcast wakes this worker and, with notifications on, the workers of other processes
// sharing the store. Call it after committing new deliveries.
func (w *Worker) Broadcast(ctx context.Context) {
	w.Wake()
	if w.notifier != nil {
		w.notifier.Broadcast(ctx)
	}
}

// Running reports whether the claim loop is alive.
func (w *Worker) Running() bool { return w.running.Load() }

// LastTick is when the last claim pass began, or Start if none has yet (by the worker's
// clock); zero before Start. Health checks compare it with the poll interval.
func (w *Worker) LastTick() time.Time {
	n := w.lastTick.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (w *Worker) loop(ctx context.Context) {
	defer close(w.loopDone)
	defer w.running.Store(false)
	// The tick survives wake-ups, so a stream of wakes neither postpones nor multiplies
	// the correctness pass.
	var tick <-chan time.Time
	// paced fires when the earliest delivery deferred by the Pacer comes due (pacedAt);
	// it is armed again only for an earlier one, so passes do not pile up timers.
	var paced <-chan time.Time
	var pacedAt time.Time
	for {
		w.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if tick == nil {
			tick = w.cfg.After(w.cfg.PollInterval)
		}
		if at, ok := w.nextPacedWake(); ok && (paced == nil || at.Before(pacedAt)) {
			paced, pacedAt = w.cfg.After(at.Sub(w.cfg.Now())), at
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-tick:
			tick = nil
		case <-paced:
			paced = nil
		}
	}
}

// pass claims and dispatches due deliveries until a claim comes back short, which means
// nothing more is due. It claims only rows it can start at once (a claimed row's lease is
// already running), and waits for enough free send slots to make the claim a real batch.
func (w *Worker) pass(ctx context.Context) {
	start := w.cfg.Now()
	w.lastTick.Store(start.UnixNano())
	w.dropPacedWakes(start)
	claimed := 0
	defer func() {
		if w.cfg.OnPass != nil {
			w.cfg.OnPass(claimed)
		}
	}()
	w.clock.sync(ctx)
	if !w.parked.isLoaded() {
		// Once, at the first pass (and until a read succeeds): parks survive restarts.
		w.loadParked(ctx)
	}
	w.startProbes(ctx)
	for ctx.Err() == nil {
		free, ok := w.awaitSlots(ctx)
		if !ok {
			return
		}
		// Only this goroutine takes slots, so the free ones stay free until taken here.
		n := min(free, w.cfg.Batch)
		for range n {
			w.slots <- struct{}{}
		}
		ds, err := w.cfg.Store.Claim(ctx, ClaimParams{
			Owner: w.cfg.Owner,
			Limit: n,
			Lease: w.cfg.Lease,
			Now:   w.clock.Now(),
		})
		if err != nil {
			w.releaseSlots(n)
			if ctx.Err() == nil {
				w.log.Error("claim deliveries", zap.Error(err))
			}
			return
		}
		w.releaseSlots(n - len(ds))
		if len(ds) > 0 {
			w.refreshParkedIfStale(ctx)
		}
		// Rows claimed just as Stop began are dispatched all the same: Stop's grace and
		// release cover them, and dropping them would leave their leases to expire.
		for _, d := range ds {
			if w.holdIfParked(d) {
				continue
			}
			if w.cfg.Pacer != nil {
				now := w.cfg.Now()
				if ok, at := w.cfg.Pacer.Reserve(d, now); !ok {
					w.inflight.Add(1)
					if w.takeHold(at.Sub(now)) {
						go w.holdSend(d, at)
						continue
					}
					// The release is a store write: made beside the claims, on the send
					// slot taken for the row, so a backlog is given back in parallel.
					w.pushPaced(at)
					go w.deferSend(d, w.clock.Now().Add(at.Sub(now)))
					continue
				}
			}
			w.inflight.Add(1)
			go w.process(d)
		}
		claimed += len(ds)
		if len(ds) < n {
			return
		}
	}
}

// awaitSlots waits until a claim is worth its transaction and returns the free send
// slots: three quarters of a batch of them (or of Concurrency, if that is smaller), which
// includes the case where nothing is in flight. Claiming as soon as one slot freed would
// make most claims under load lease one or two rows, each with its own commit; at half a
// batch, a claim that starts while the rows of the one before still hold their slots
// takes what they left, and claims settle at half a batch each (measured in the
// burn-down: 53 rows per claim at half, 80 at three quarters, a third fewer commits).
func (w *Worker) awaitSlots(ctx context.Context) (int, bool) {
	need := max(1, min(w.cfg.Batch, w.cfg.Concurrency)*3/4)
	for {
		if free := cap(w.slots) - len(w.slots); free >= need {
			return free, true
		}
		select {
		case <-w.freed:
		case <-ctx.Done():
			return 0, false
		}
	}
}

// releaseSlots gives n send slots back and tells a pass waiting in awaitSlots.
func (w *Worker) releaseSlots(n int) {
	for range n {
		<-w.slots
	}
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// Stop stops claiming, lets in-flight sends finish within ShutdownGrace (or until ctx
// ends), then cancels the rest and releases their leases without charging an attempt.
// It is idempotent and safe before Start.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	switch w.state {
	case workerNew:
		w.state = workerStopped
		close(w.stopDone)
		w.mu.Unlock()
		return nil
	case workerStopped:
		w.mu.Unlock()
		select {
		case <-w.stopDone:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stop outbox worker: %w", ctx.Err())
		}
	}
	w.state = workerStopped
	w.mu.Unlock()
	defer close(w.stopDone)
	defer w.cancelSends()

	w.stopLoop()
	<-w.loopDone
	if w.listenDone != nil {
		<-w.listenDone
	}

	idle := make(chan struct{})
	go func() {
		w.inflight.Wait()
		close(idle)
	}()
	grace := time.NewTimer(w.cfg.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-idle:
		w.log.Info("outbox worker stopped")
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	w.aborted.Store(true)
	w.cancelSends()
	// Cancelled sends return promptly if their providers honour the context; releasing
	// their leases is one short store write each.
	hard := time.NewTimer(storeTimeout + time.Second)
	defer hard.Stop()
	select {
	case <-idle:
		w.log.Info("outbox worker stopped after cancelling sends that outlived the shutdown grace",
			zap.Duration("shutdown_grace", w.cfg.ShutdownGrace))
		return nil
	case <-hard.C:
		return errors.New("stop outbox worker: sends still running after cancellation; their leases will expire")
	}
}

func (w *Worker) listen(ctx context.Context) {
	defer close(w.listenDone)
	for {
		err := w.notifier.Listen(ctx, w.Wake)
		if ctx.Err() != nil {
			return
		}
		// Missing notifications only slows delivery down to the tick; keep trying.
		w.log.Warn("listen for outbox notifications; retrying", zap.Error(err))
		t := time.NewTimer(5 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		w.Wake()
	}
}

func (w *Worker) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(w.sendCtx), storeTimeout)
}

// maxAttempts is a delivery's attempt budget: its own (set at intake), or its channel's
// default when that is zero.
func maxAttempts(d Delivery) int {
	if d.MaxAttempts > 0 {
		return d.MaxAttempts
	}
	return DefaultAttempts(d.Channel)
}

// DefaultAttempts is the attempt budget of a channel when neither the route nor the
// App's retry options set one: DefaultWebhookAttempts for webhooks, DefaultEmailAttempts
// otherwise. intake plans deliveries with it, so the budget stored at intake and the one
// the worker falls back to are one number.
func DefaultAttempts(ch Channel) int {
	if ch == ChannelWebhook {
		return DefaultWebhookAttempts
	}
	return DefaultEmailAttempts
}

func deliveryFields(d Delivery) []zap.Field {
	return []zap.Field{
		zap.String("delivery_id", d.ID.String()),
		zap.String("submission_id", d.SubmissionID.String()),
		zap.String("route", d.Route),
		zap.String("channel", string(d.Channel)),
		zap.Int("attempt", d.Attempts),
	}
}
