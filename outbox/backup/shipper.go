package backup

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// Defaults of `backup { every; max_local }`.
const (
	DefaultInterval = 5 * time.Second
	DefaultMaxLocal = 1 << 30
	// putTimeout bounds one object's PUT and HEAD: a hung bucket delays the next pass,
	// never intake.
	putTimeout = 60 * time.Second
	// nearBound is the share of MaxLocal past which the shipper warns and health says so.
	nearBound = 0.8
)

// Shipper copies the spool's sealed segments to a bucket, one object per segment, and
// tells the spool (MarkShipped) once the bucket confirmed the object's checksum. Nothing
// here runs on a visitor's request: intake only appends to the spool.
type Shipper struct {
	Spool    *spool.Spool
	Bucket   Bucket
	Prefix   string
	Instance string        // in every key; default the host name
	Interval time.Duration // default DefaultInterval
	// MaxLocal bounds the bytes kept for the bucket (default DefaultMaxLocal). Past it the
	// oldest segments already in the store are released unshipped (counted in Dropped
	// and logged as an error): the disk must not fill and stop intake because the bucket
	// is gone. Segments not yet in the store are never released.
	MaxLocal int64
	Logger   *zap.Logger
	Now      func() time.Time

	mu    sync.Mutex // one pass at a time
	stats Stats
	wake  chan struct{}
	stop  context.CancelFunc
	done  chan struct{}
}

// Stats is what the shipper did since it started, for metrics and health.
type Stats struct {
	Objects int64 // objects confirmed in the bucket
	Records int64 // records in them
	Dropped int64 // records released unshipped at the MaxLocal bound
	// ByForm counts Records per form: with form_outbox_submissions_total it is the 1:1
	// comparison of stored and backed up per form (docs/operations.md).
	ByForm      map[string]int64
	LastShipped time.Time // last confirmed object
	LastError   string    // the last pass's failure; empty after a good pass
	LastErrorAt time.Time
}

// Lag is how far the bucket is behind the journal.
type Lag struct {
	Records int
	Bytes   int64
	Seconds float64 // age of the oldest record not yet shipped; 0 when none
	// NearBound is set when the kept bytes passed 80% of MaxLocal.
	NearBound bool
}

func (s *Shipper) defaults() {
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	if s.MaxLocal <= 0 {
		s.MaxLocal = DefaultMaxLocal
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Instance == "" {
		h, _ := os.Hostname()
		s.Instance = h
	}
	s.Instance = instanceName(s.Instance)
}

// Start holds the spool for the shipper and runs passes every Interval until Stop.
func (s *Shipper) Start() {
	s.defaults()
	s.Spool.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done, s.wake = cancel, make(chan struct{}), make(chan struct{}, 1)
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.wake:
			}
			_ = s.ShipNow(ctx)
		}
	}()
}

// Wake asks for a pass soon.
func (s *Shipper) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stop ends the loop and gives back the hold; what is unshipped and not yet replayed
// stays in the spool for the next start.
func (s *Shipper) Stop() error {
	if s.stop == nil {
		return nil
	}
	s.stop()
	<-s.done
	s.stop = nil
	return s.Spool.Unhold()
}

// Stats returns the counters.
func (s *Shipper) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.ByForm = make(map[string]int64, len(s.stats.ByForm))
	for f, n := range s.stats.ByForm {
		st.ByForm[f] = n
	}
	return st
}

// Lag reads the spool's unshipped part.
func (s *Shipper) Lag() Lag {
	st := s.Spool.Stats()
	l := Lag{Records: st.Unshipped, Bytes: st.UnshippedBytes, NearBound: float64(st.UnshippedBytes) > nearBound*float64(s.MaxLocal)}
	if !st.OldestUnshipped.IsZero() {
		l.Seconds = s.Now().Sub(st.OldestUnshipped).Seconds()
	}
	return l
}

// ShipNow ships every sealed segment not yet shipped, oldest first; the first failure
// ends the pass (the segment stays for the next one). Then it enforces MaxLocal.
func (s *Shipper) ShipNow(ctx context.Context) error {
	s.defaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.pass(ctx)
	if err != nil {
		s.stats.LastError, s.stats.LastErrorAt = err.Error(), s.Now()
		s.Logger.Warn("backup: bucket not reached; the journal keeps the records", zap.Error(err))
	} else {
		s.stats.LastError = ""
	}
	s.bound()
	return err
}

func (s *Shipper) pass(ctx context.Context) error {
	segs, err := s.Spool.Unshipped()
	if err != nil {
		return err
	}
	for _, seg := range segs {
		if err := ctx.Err(); err != nil {
			return err
		}
		forms, err := s.ship(ctx, seg.Seq)
		if err != nil {
			return err
		}
		if err := s.Spool.MarkShipped(seg.Seq); err != nil {
			return err
		}
		if len(forms) > 0 {
			s.stats.Objects++
			s.stats.Records += int64(len(forms))
			s.stats.LastShipped = s.Now()
			if s.stats.ByForm == nil {
				s.stats.ByForm = map[string]int64{}
			}
			for _, f := range forms {
				s.stats.ByForm[f]++
			}
		}
	}
	return nil
}

// ship writes one segment's object and confirms it with HEAD; it returns the form of
// each record in it (none for a segment of damaged bytes only: nothing to ship).
func (s *Shipper) ship(ctx context.Context, seq uint64) ([]string, error) {
	entries, err := s.Spool.ReadSegment(seq)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	oldest := entries[0].Submission.CreatedAt
	for _, e := range entries {
		if e.Submission.CreatedAt.Before(oldest) {
			oldest = e.Submission.CreatedAt
		}
	}
	body, err := encodeObject(entries, func(f outbox.File) string { return s.Spool.FilePath(f.ID) })
	if err != nil {
		return nil, err
	}
	key := ObjectKey(s.Prefix, oldest, s.Instance, entries[0].Submission.ID)
	want := sum(body)
	pctx, cancel := context.WithTimeout(ctx, putTimeout)
	defer cancel()
	if err := s.Bucket.Put(pctx, key, body, want); err != nil {
		return nil, err
	}
	got, size, err := s.Bucket.Head(pctx, key)
	if err != nil {
		return nil, err
	}
	if got != want || size != int64(len(body)) {
		return nil, fmt.Errorf("backup: %s: %w (bucket has %d bytes, sha256 %q)", key, errMismatch, size, got)
	}
	forms := make([]string, len(entries))
	for i, e := range entries {
		forms[i] = e.Submission.Form
	}
	return forms, nil
}

// bound releases the oldest segments already in the store while the kept bytes exceed
// MaxLocal, and warns past 80% of it.
func (s *Shipper) bound() {
	st := s.Spool.Stats()
	if st.UnshippedBytes <= s.MaxLocal {
		if float64(st.UnshippedBytes) > nearBound*float64(s.MaxLocal) {
			s.Logger.Warn("backup: journal kept for the bucket is near max_local",
				zap.Int64("bytes", st.UnshippedBytes), zap.Int64("max_local", s.MaxLocal))
		}
		return
	}
	over := st.UnshippedBytes - s.MaxLocal
	released, records := s.Spool.ReleaseReplayed(over)
	if released > 0 {
		s.stats.Dropped += int64(records)
		s.Logger.Error("backup: max_local reached; released journal the bucket never got (the database has it)",
			zap.Int("segments", released), zap.Int("records", records), zap.Int64("max_local", s.MaxLocal))
	}
}
