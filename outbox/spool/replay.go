package spool

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Report is what one replay pass did.
type Report struct {
	Stored     int // submissions written to the store by this pass
	Duplicates int // already stored (an earlier pass, or the visitor's retry reached the store)
	Segments   int // segments drained and deleted
	Corrupt    int // bad ranges kept aside in corrupt/
	Remaining  int // entries still spooled after the pass
}

// StoredPost is one submission a replay pass stored, as the lead ledger counts it
// (outbox.LedgerCounter.Replayed): form and creation time, never content.
type StoredPost struct {
	Form      string
	CreatedAt time.Time
	Test      bool
}

// ReplayAcceptTimeout bounds one replayed Accept. It is longer than the intake deadline
// (outbox.DefaultAcceptTimeout) on purpose: no visitor waits for a replay, and a store
// that is slow but working, each write taking longer than intake's deadline (which is
// why the submissions were spooled), must still be drained. With intake's deadline every
// replayed write to such a store would time out and the spool would never empty. It is
// still a bound, so a hung store cannot hold a pass, and ReplayNow's callers, forever.
const ReplayAcceptTimeout = 5 * time.Second

// Replay drains every sealed segment into store, oldest first and in append order, so
// submissions reach the store in the order their UUIDv7 ids were made. Each record is
// written with outbox.Accept, which writes nothing for an id (or bound idempotency key)
// already stored: replaying a segment twice, or one that was half replayed before a crash,
// stores each submission once. A key bound meanwhile to other content stores the record
// quarantined (idempotency_key_reused), exactly as the handler would have. A segment is deleted only after every valid record in it is
// stored; bad ranges are copied to corrupt/ and reported first. The first store error
// stops the pass and leaves the current segment in place for the next one.
//
// Replay is not safe to run concurrently with itself on one Spool; Replayer serialises it.
func (s *Spool) Replay(ctx context.Context, store outbox.Store, logger *zap.Logger) (rep Report, err error) {
	return s.ReplayTo(ctx, store, logger, nil)
}

// ReplayTo is Replay calling stored, when set, for each submission it stores.
func (s *Spool) ReplayTo(ctx context.Context, store outbox.Store, logger *zap.Logger, stored func(StoredPost)) (rep Report, err error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	seqs, err := s.sealed()
	if err != nil {
		return rep, err
	}
	defer func() { rep.Remaining = s.Stats().Entries }()
	for _, seq := range seqs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if s.isReplayed(seq) {
			continue // kept for the shipper (hold.go)
		}
		b, err := os.ReadFile(s.segPath(seq))
		if err != nil {
			return rep, fmt.Errorf("spool replay: read segment %d: %w", seq, err)
		}
		recs, bad := parseSegment(b)
		var files []uuid.UUID // deleted with the segment
		for _, r := range recs {
			sub := r.Entry.Submission
			for _, f := range sub.Files {
				files = append(files, f.ID)
			}
			if damaged := s.attachFiles(&sub); len(damaged) > 0 {
				// Ids and offsets only: file names are visitor data.
				logger.Error("spool: file content lost or damaged; storing its metadata only",
					zap.Uint64("segment", seq), zap.Int("offset", r.Off), zap.String("id", sub.ID.String()),
					zap.Int("files", len(damaged)))
			}
			actx, cancel := context.WithTimeout(ctx, ReplayAcceptTimeout+outbox.FileAllowance(&sub))
			res, err := outbox.Accept(actx, store, &sub, r.Entry.Deliveries)
			cancel()
			if err != nil {
				return rep, fmt.Errorf("spool replay: segment %d offset %d: %w", seq, r.Off, err)
			}
			if res.Duplicate {
				rep.Duplicates++
			} else {
				rep.Stored++
				if stored != nil {
					stored(StoredPost{Form: sub.Form, CreatedAt: sub.CreatedAt, Test: sub.Test})
				}
			}
		}
		for _, br := range bad {
			name, err := s.keepAside(seq, b, br)
			if err != nil {
				return rep, err
			}
			rep.Corrupt++
			// The bytes may hold visitor data: log where they are, never what they are.
			logger.Error("spool: skipped damaged bytes; kept aside",
				zap.Uint64("segment", seq), zap.Int("offset", br.Off),
				zap.Int("bytes", br.End-br.Off), zap.String("why", br.Why), zap.String("kept", name))
		}
		if err := s.replayedSegment(seq, files); err != nil {
			return rep, err
		}
		rep.Segments++
	}
	return rep, nil
}

// Replayer drains a spool into a store in the background: on Wake (the store just
// answered), on a periodic tick, and on demand (ReplayNow, for the admin API).
type Replayer struct {
	Spool    *Spool
	Store    outbox.Store
	Logger   *zap.Logger
	Interval time.Duration // tick; default 5s
	// OnReplay, when set, is called after every pass that did something or failed.
	OnReplay func(Report, error)
	// Replayed, when set, is called for each submission a pass stored.
	Replayed func(StoredPost)

	mu     sync.Mutex // one pass at a time
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// DefaultReplayInterval is how often the replayer looks at a non-empty spool.
const DefaultReplayInterval = 5 * time.Second

// Start runs the loop until Stop.
func (r *Replayer) Start() {
	if r.Interval <= 0 {
		r.Interval = DefaultReplayInterval
	}
	if r.Logger == nil {
		r.Logger = zap.NewNop()
	}
	r.wake = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.loop(ctx)
}

// Wake asks for a pass soon (cheap; safe before Start and after Stop).
func (r *Replayer) Wake() {
	if r.wake == nil {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Stop ends the loop and waits for a running pass to finish or be cancelled.
func (r *Replayer) Stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
}

func (r *Replayer) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if r.Spool.Stats().Entries > 0 {
			_, _ = r.ReplayNow(ctx)
		}
		// A full disk may have room again (replay just freed it, or an operator did).
		r.Spool.Recheck()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.wake:
		}
	}
}

// ReplayNow runs one pass now (waiting for a running one) and returns its report.
func (r *Replayer) ReplayNow(ctx context.Context) (Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	logger := r.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	rep, err := r.Spool.ReplayTo(ctx, r.Store, logger, r.Replayed)
	if err != nil {
		logger.Warn("spool replay paused; will retry", zap.Int("stored", rep.Stored),
			zap.Int("remaining", rep.Remaining), zap.Error(err))
	} else if rep.Stored+rep.Duplicates+rep.Corrupt > 0 {
		logger.Info("spool replayed", zap.Int("stored", rep.Stored),
			zap.Int("duplicates", rep.Duplicates), zap.Int("corrupt", rep.Corrupt),
			zap.Int("remaining", rep.Remaining))
	}
	if r.OnReplay != nil && (err != nil || rep.Stored+rep.Duplicates+rep.Corrupt > 0) {
		r.OnReplay(rep, err)
	}
	return rep, err
}
