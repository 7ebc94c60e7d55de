package outbox

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DatabaseClock is implemented by stores whose database is shared by several processes
// and has a clock of its own (PostgreSQL). Due times and leases are compared across
// processes there, so they must all be written and judged on one clock: a process whose
// clock runs minutes ahead would otherwise claim retries before they are due and steal
// leases that are still live, and one that runs behind would hold expired leases for
// minutes before reclaiming them.
type DatabaseClock interface {
	// DatabaseNow reads the database's current time.
	DatabaseNow(ctx context.Context) (time.Time, error)
}

// clockResync is how often (on the process's monotonic clock) the worker measures again
// how far its clock is from the database's, so that a clock stepped by NTP while the
// process runs is followed within this long.
const clockResync = time.Minute

// dbClock turns the worker's clock (WorkerConfig.Now) into the database's: it adds the
// offset last measured between the two. The worker's clock still drives elapsed time, so a
// test's ManualClock moves leases and backoff forward as before; only its starting point
// is the database's. With a store that is not a DatabaseClock (SQLite, one process) the
// offset stays zero.
type dbClock struct {
	store  DatabaseClock // nil: no database clock
	now    func() time.Time
	log    *zap.Logger
	offset atomic.Int64 // nanoseconds: database minus process
	synced time.Time    // monotonic reading of the last successful sync; zero before
}

// Now is the worker's clock moved onto the database's.
func (c *dbClock) Now() time.Time {
	return c.now().Add(time.Duration(c.offset.Load()))
}

// sync measures the offset when it was never measured or clockResync has passed. A failed
// read keeps the previous offset (the database is down, the claim will fail too) and is
// tried again on the next pass. Only the claim loop calls it, so synced needs no lock;
// the offset is read by the sends' goroutines too, hence atomic.
func (c *dbClock) sync(ctx context.Context) {
	if c.store == nil || (!c.synced.IsZero() && time.Since(c.synced) < clockResync) {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	before := c.now()
	db, err := c.store.DatabaseNow(sctx)
	after := c.now()
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("read the database clock", zap.Error(err))
		}
		return
	}
	// The database read its clock somewhere within the round trip; its middle is the
	// best guess.
	offset := db.Sub(before.Add(after.Sub(before) / 2))
	c.offset.Store(int64(offset))
	c.synced = time.Now()
	if offset > time.Second || offset < -time.Second {
		c.log.Warn("this process's clock differs from the database's; leases and due times follow the database",
			zap.Duration("database_minus_process", offset))
	}
}
