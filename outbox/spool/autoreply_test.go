package spool

import (
	"context"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// Spooled posts keep their autoreply's gate in the payload: replayed, they are held to
// the window at the time they were made, so two spooled posts from one address get one
// reply, and a third made after the window its own.
func TestReplayedAutoreplyKeepsTheWindow(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var es []Entry
	for _, at := range []time.Time{t0, t0.Add(30 * time.Minute), t0.Add(61 * time.Minute)} {
		sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(at))
		es = append(es, Entry{Submission: *sub, Deliveries: []outbox.Delivery{
			storetest.NewDelivery(sub, "email-0", "team@example.com"),
			storetest.NewAutoreply(sub, "ada@example.com", time.Hour),
		}})
	}
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			s := openSpool(t, t.TempDir(), Options{})
			for _, e := range es {
				if err := s.Append(e); err != nil {
					t.Fatal(err)
				}
			}
			if rep, err := s.Replay(context.Background(), store, nil); err != nil || rep.Stored != len(es) {
				t.Fatalf("replay = %+v, %v", rep, err)
			}
			var replies []int
			for _, e := range es {
				ds, err := store.ListDeliveries(context.Background(), e.Submission.ID)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, d := range ds {
					if d.Channel == outbox.ChannelAutoreply {
						n++
					}
				}
				replies = append(replies, n)
			}
			if replies[0] != 1 || replies[1] != 0 || replies[2] != 1 {
				t.Fatalf("autoreplies per replayed post = %v, want [1 0 1]", replies)
			}
		})
	}
}
