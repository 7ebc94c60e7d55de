package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Retention defaults.
const (
	DefaultPruneBatch    = 500
	DefaultPruneInterval = time.Hour
)

// RetentionConfig configures a Pruner. Zero values mean the defaults.
type RetentionConfig struct {
	Ops Ops
	// Ledger, when set, loses the lead ledger's counts of the days wholly before the
	// cutoff at the end of each pass, as their rows do (outbox/ledger.go).
	Ledger LedgerStore
	// MaxAge is the retention: submissions created longer ago than this, whose
	// deliveries are all terminal, are deleted. Required (> 0).
	MaxAge time.Duration
	// Batch is the most rows one transaction deletes, so a first prune of a large
	// history never holds the database (SQLite's single writer above all) for long.
	// Default 500.
	Batch int
	// Interval is the time between passes. Default 1h.
	Interval time.Duration
	// Now and After are the clock; tests inject a ManualClock.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// OnPass, when set, is called after every pass (a test signal).
	OnPass func(PruneReport, error)
	Logger *zap.Logger
}

// PruneReport says what one pass did.
type PruneReport struct {
	Submissions int
	Events      int
	// Busy means another instance held the pruner lock, so this pass did nothing.
	Busy bool
}

// Pruner deletes expired history on a schedule: one pass at Start, then one every
// Interval. Only one pruner per database runs a pass at a time (Ops.LockPruner), so
// instances sharing a database neither duplicate the work nor contend for the same rows.
type Pruner struct {
	cfg  RetentionConfig
	log  *zap.Logger
	once sync.Once
	stop context.CancelFunc
	done chan struct{}
}

// NewPruner returns a Pruner with cfg's defaults applied. It does not start it.
func NewPruner(cfg RetentionConfig) (*Pruner, error) {
	if cfg.Ops == nil {
		return nil, errors.New("retention: Ops is required")
	}
	if cfg.MaxAge <= 0 {
		return nil, errors.New("retention: the maximum age must be positive")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultPruneBatch
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultPruneInterval
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
	return &Pruner{cfg: cfg, log: cfg.Logger}, nil
}

// RunOnce runs one pass: take the pruner lock, delete batches of submissions and events
// older than Now - MaxAge until a batch comes back short, release the lock.
func (p *Pruner) RunOnce(ctx context.Context) (PruneReport, error) {
	var rep PruneReport
	unlock, ok, err := p.cfg.Ops.LockPruner(ctx)
	if err != nil {
		return rep, fmt.Errorf("retention: %w", err)
	}
	if !ok {
		rep.Busy = true
		return rep, nil
	}
	defer unlock()
	before := p.cfg.Now().Add(-p.cfg.MaxAge)
	for ctx.Err() == nil {
		res, err := p.cfg.Ops.Prune(ctx, before, p.cfg.Batch)
		// A store may report rows it deleted together with an error from after the
		// delete (see sqlitestore's scrubWAL): count them all the same.
		rep.Submissions += res.Submissions
		rep.Events += res.Events
		if err != nil {
			return rep, fmt.Errorf("retention: %w", err)
		}
		if res.Submissions < p.cfg.Batch && res.Events < p.cfg.Batch {
			if p.cfg.Ledger != nil {
				if err := p.cfg.Ledger.PruneLedger(ctx, UTCDay(before)); err != nil {
					return rep, fmt.Errorf("retention: %w", err)
				}
			}
			return rep, nil
		}
	}
	return rep, fmt.Errorf("retention: %w", ctx.Err())
}

// Start runs a pass now and then every Interval, until Stop. ctx carries values only.
func (p *Pruner) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = cancel
	p.done = make(chan struct{})
	go p.loop(ctx)
}

func (p *Pruner) loop(ctx context.Context) {
	defer close(p.done)
	for {
		rep, err := p.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Error("prune expired submissions", zap.Error(err))
		case rep.Submissions > 0 || rep.Events > 0:
			p.log.Info("pruned expired submissions",
				zap.Int("submissions", rep.Submissions),
				zap.Int("events", rep.Events),
				zap.Duration("retention", p.cfg.MaxAge))
		}
		if p.cfg.OnPass != nil {
			p.cfg.OnPass(rep, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.cfg.After(p.cfg.Interval):
		}
	}
}

// Stop ends the loop, cutting a running pass short between (or inside) batches; a batch
// cut short rolls back whole. Idempotent; safe before Start.
func (p *Pruner) Stop() {
	p.once.Do(func() {
		if p.stop != nil {
			p.stop()
			<-p.done
		}
	})
}
