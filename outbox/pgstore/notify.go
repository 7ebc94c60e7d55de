package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyWindow is the debounce window: however many commits call Broadcast, at most one
// NOTIFY leaves this process per window. A burst of submissions needs one wake-up, not one
// per row; the receiving worker claims in batches anyway.
const notifyWindow = 50 * time.Millisecond

// Backoff of Listen's reconnect loop.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// channelName includes the schema so that stores in different schemas (tenants, isolated
// tests) never wake each other. Channel names are identifiers: at most 63 bytes.
func channelName(schema string) string {
	name := "form_outbox"
	if schema != "" {
		name += "." + schema
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// Broadcast schedules a NOTIFY on the store's channel and returns at once. The first call
// after a quiet window notifies immediately; calls within the window after it fold into
// one NOTIFY at the window's end. ctx is not used: the NOTIFY outlives the request that
// asked for it. Failures are dropped: notifications only accelerate, the worker's tick is
// the correctness path.
func (s *Store) Broadcast(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.notifyPending {
		return
	}
	s.notifyPending = true
	s.notifyWG.Add(1)
	wait := max(time.Until(s.lastNotify.Add(notifyWindow)), 0)
	s.notifyTimer = time.AfterFunc(wait, s.sendNotify)
}

func (s *Store) sendNotify() {
	defer s.notifyWG.Done()
	s.mu.Lock()
	// Cleared before sending so that a Broadcast during the send schedules the next one
	// (a commit after this NOTIFY went out must not go unannounced).
	s.notifyPending = false
	s.lastNotify = time.Now()
	s.notifySends++
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, qNotify, s.channel)
}

// Listen holds one dedicated connection (outside the pool, so no pooled connection is ever
// left listening) that LISTENs on the store's channel, and calls wake for each
// notification until ctx ends; it then returns nil. On a connection error it reconnects
// with exponential backoff, and after each reconnect calls wake once, because
// notifications sent while it was away are lost.
func (s *Store) Listen(ctx context.Context, wake func()) error {
	backoff := listenBackoffMin
	reconnect := false
	for {
		err := s.listenOnce(ctx, wake, reconnect)
		if ctx.Err() != nil {
			return nil
		}
		_ = err // the loop is the handling: the next connection starts clean
		reconnect = true
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, listenBackoffMax)
	}
}

func (s *Store) listenOnce(ctx context.Context, wake func(), reconnected bool) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.mu.Lock()
	hook := s.onListening
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	if reconnected {
		wake()
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("listen: wait: %w", err)
		}
		wake()
	}
}
