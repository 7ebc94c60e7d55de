package outbox

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// LedgerCounter counts, in memory, what intake answered and what the spool replayed,
// per form and UTC day of the submission's created_at, and flushes the counts to a
// LedgerStore. Counting costs a map update under a mutex; no post waits for a write.
//
// The direction of error is chosen: a count is only ever made after the fact it counts
// (the answer follows the commit or the spool's fsync, the replayed count follows the
// replayed commit), and the counts are cumulative per instance, written with "keep the
// greatest" (LedgerStore.RecordLedger). So a kill -9 loses at most the increments made
// since the last flush, and a failed or repeated flush never adds any twice: the ledger
// may show fewer answered posts than there were, never more. A missing answered count
// can hide a loss for the seconds it covers; it can never invent one.
type LedgerCounter struct {
	instance string

	mu     sync.Mutex
	counts map[ledgerKey]*LedgerCount
	dirty  map[ledgerKey]bool
}

type ledgerKey struct {
	day  time.Time
	form string
}

// ledgerKeep is how long a day's counts stay in memory after its last increment was
// flushed. A later increment of an evicted day restarts at zero and is kept below the
// recorded count by RecordLedger: it is lost, in the safe direction (see LedgerCounter).
// Nothing counts a day that old but a spool replayed after a week.
const ledgerKeep = 7 * 24 * time.Hour

// NewLedgerCounter returns a counter whose rows are keyed by instance: a name unique to
// this process and config (the worker's owner name is).
func NewLedgerCounter(instance string) *LedgerCounter {
	return &LedgerCounter{instance: instance, counts: map[ledgerKey]*LedgerCount{}, dirty: map[ledgerKey]bool{}}
}

// Instance is the name the counter's rows are recorded under.
func (c *LedgerCounter) Instance() string { return c.instance }

// Answered counts a new post of form, created at createdAt, answered success; queued
// says the spool took it.
func (c *LedgerCounter) Answered(form string, createdAt time.Time, queued bool) {
	c.add(form, createdAt, func(lc *LedgerCount) {
		lc.Answered++
		if queued {
			lc.Spooled++
		}
	})
}

// Replayed counts a spooled post of form the replayer stored.
func (c *LedgerCounter) Replayed(form string, createdAt time.Time) {
	c.add(form, createdAt, func(lc *LedgerCount) { lc.Replayed++ })
}

func (c *LedgerCounter) add(form string, createdAt time.Time, inc func(*LedgerCount)) {
	k := ledgerKey{day: UTCDay(createdAt), form: form}
	c.mu.Lock()
	defer c.mu.Unlock()
	lc := c.counts[k]
	if lc == nil {
		lc = &LedgerCount{Day: k.day, Form: form}
		c.counts[k] = lc
	}
	inc(lc)
	c.dirty[k] = true
}

// Totals sums the counts per form over the days held in memory (metrics read them).
func (c *LedgerCounter) Totals() map[string]LedgerCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]LedgerCount{}
	for k, lc := range c.counts {
		t := out[k.form]
		t.Form = k.form
		t.Answered += lc.Answered
		t.Spooled += lc.Spooled
		t.Replayed += lc.Replayed
		out[k.form] = t
	}
	return out
}

// Flush records the counts changed since the last successful flush. On error they stay
// marked and the next flush writes them again (RecordLedger keeps the greatest, so a
// write that did commit despite the error counts nothing twice). Days older than
// ledgerKeep before now are dropped from memory once recorded.
func (c *LedgerCounter) Flush(ctx context.Context, store LedgerStore, now time.Time) error {
	c.mu.Lock()
	var batch []LedgerCount
	for k := range c.dirty {
		batch = append(batch, *c.counts[k])
	}
	c.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	sort.Slice(batch, func(i, j int) bool { // one lock order for every instance's upserts
		if !batch[i].Day.Equal(batch[j].Day) {
			return batch[i].Day.Before(batch[j].Day)
		}
		return batch[i].Form < batch[j].Form
	})
	if err := store.RecordLedger(ctx, c.instance, batch, now); err != nil {
		return fmt.Errorf("flush ledger counts: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range batch {
		k := ledgerKey{day: w.Day, form: w.Form}
		if cur := c.counts[k]; cur != nil && *cur == w {
			delete(c.dirty, k) // unchanged since the snapshot: recorded
		}
	}
	for k := range c.counts {
		if !c.dirty[k] && now.Sub(k.day) > ledgerKeep {
			delete(c.counts, k)
		}
	}
	return nil
}
