package outbox_test

import (
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestAcceptedDueTimesFollowTheDatabaseClock: intake plans due times by its host's clock;
// on PostgreSQL, shared by hosts whose clocks differ, the Acceptor stores them on the
// database's clock, so a host five minutes ahead does not store deliveries due five
// minutes late, nor one behind deliveries due early. SQLite has one host, whose clock is
// the store's: the due times are stored as planned.
func TestAcceptedDueTimesFollowTheDatabaseClock(t *testing.T) {
	forEachStore(t, func(t *testing.T, s outbox.Store) {
		dc, shared := s.(outbox.DatabaseClock)
		for _, skew := range []time.Duration{5 * time.Minute, -5 * time.Minute} {
			hostNow := func() time.Time { return time.Now().Add(skew) }
			a := &outbox.Acceptor{Store: s, Now: hostNow}
			sub := storetest.NewSubmission("contact")
			planned := hostNow().UTC().Truncate(time.Microsecond)
			now := storetest.NewDelivery(sub, "email", "sales@example.com")
			now.NextAttemptAt = planned
			later := storetest.NewDelivery(sub, "email", "ops@example.com")
			later.NextAttemptAt = planned.Add(2 * time.Minute)
			if _, err := a.Accept(ctxFor(t), sub, []outbox.Delivery{now, later}); err != nil {
				t.Fatal(err)
			}
			// What the database's clock read while the host's read planned.
			offset := time.Duration(0)
			if shared {
				db, err := dc.DatabaseNow(ctxFor(t))
				if err != nil {
					t.Fatal(err)
				}
				offset = db.Sub(hostNow())
			}
			for _, d := range []outbox.Delivery{now, later} {
				got := getDelivery(t, s, d.ID).NextAttemptAt
				want := d.NextAttemptAt.Add(offset)
				// The offset is measured over a round trip; load makes that a little loose.
				if diff := got.Sub(want); diff > 2*time.Second || diff < -2*time.Second {
					t.Errorf("host clock %v off: due %v stored as %v, want %v (the database's clock)", skew, d.NextAttemptAt, got, want)
				}
			}
		}
	})
}
