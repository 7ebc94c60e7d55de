package outbox

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// recordingLedger keeps what RecordLedger was given, greatest per key as the stores do,
// and fails while fail is set (after writing, as an unclear commit would).
type recordingLedger struct {
	LedgerStore
	rows map[ledgerKey]LedgerCount
	fail bool
}

func (r *recordingLedger) RecordLedger(_ context.Context, _ string, counts []LedgerCount, _ time.Time) error {
	for _, c := range counts {
		k := ledgerKey{day: c.Day, form: c.Form}
		old := r.rows[k]
		c.Answered, c.Spooled, c.Replayed = max(old.Answered, c.Answered), max(old.Spooled, c.Spooled), max(old.Replayed, c.Replayed)
		r.rows[k] = c
	}
	if r.fail {
		return errors.New("connection reset")
	}
	return nil
}

func TestLedgerCounterFlushIsRepeatableAndNeverCountsTwice(t *testing.T) {
	at := time.Date(2030, 1, 2, 23, 59, 0, 0, time.UTC)
	c := NewLedgerCounter("host-1")
	st := &recordingLedger{rows: map[ledgerKey]LedgerCount{}, fail: true}
	c.Answered("contact", at, false)
	c.Answered("contact", at, true)
	c.Answered("contact", at.Add(2*time.Minute), false) // the next UTC day
	if err := c.Flush(context.Background(), st, at); err == nil {
		t.Fatal("flush into a failing store: no error")
	}
	st.fail = false
	c.Replayed("contact", at)
	for i := 0; i < 2; i++ { // the unclear flush is written again, then nothing is left
		if err := c.Flush(context.Background(), st, at); err != nil {
			t.Fatal(err)
		}
	}
	d := UTCDay(at)
	want := map[ledgerKey]LedgerCount{
		{day: d, form: "contact"}:                     {Day: d, Form: "contact", Answered: 2, Spooled: 1, Replayed: 1},
		{day: d.Add(24 * time.Hour), form: "contact"}: {Day: d.Add(24 * time.Hour), Form: "contact", Answered: 1},
	}
	if !reflect.DeepEqual(st.rows, want) {
		t.Errorf("recorded %+v, want %+v", st.rows, want)
	}
	if len(c.dirty) != 0 {
		t.Errorf("counts left to flush after a good flush: %v", c.dirty)
	}
}

func TestLedgerJudgesOnlyClosedDaysForAnswers(t *testing.T) {
	d := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	counts := []LedgerCount{
		{Day: d, Form: "contact", Answered: 10, Spooled: 3, Replayed: 1}, // 2 still in the spool
		{Day: d, Form: "jobs", Answered: 5},
	}
	rows := LedgerRows{
		Submissions: []LedgerStatusCount{
			{Day: d, Form: "contact", Status: SubmissionAccepted, Count: 7},
			{Day: d, Form: "contact", Status: SubmissionSpam, Count: 1},
			{Day: d, Form: "jobs", Status: SubmissionAccepted, Count: 3},
		},
		Erased: []LedgerFormDay{{Day: d, Form: "jobs", Count: 1}},
	}
	q := LedgerQuery{Now: d.Add(24*time.Hour + LedgerGrace - time.Second)}
	if bad := assembleLedger(d, d.Add(48*time.Hour), counts, rows, q).Mismatched(); len(bad) != 0 {
		t.Errorf("an open day was flagged: %+v", bad)
	}
	q.Now = d.Add(24*time.Hour + LedgerGrace)
	bad := assembleLedger(d, d.Add(48*time.Hour), counts, rows, q).Mismatched()
	// contact: 10 <= 8 stored + 2 in the spool. jobs: 5 > 3 stored + 1 erased.
	if len(bad) != 1 || bad[0].Form != "jobs" || bad[0].Unaccounted != 1 ||
		!reflect.DeepEqual(bad[0].Mismatches, []string{MismatchNotStored}) {
		t.Fatalf("mismatched = %+v, want jobs with 1 unaccounted", bad)
	}
	conds := LedgerConditions(Ledger{Days: bad})
	if len(conds) != 1 || conds[0].Key != "jobs/2030-01-02" || conds[0].Kind != AlertLedgerMismatch || conds[0].Affected != 1 {
		t.Errorf("conditions = %+v", conds)
	}
	q.Horizon = 24 * time.Hour // the day is past retention: shown, not judged
	if bad := assembleLedger(d, d.Add(48*time.Hour), counts, rows, q).Mismatched(); len(bad) != 0 {
		t.Errorf("a day past the retention horizon was flagged: %+v", bad)
	}
}

func TestLedgerTotalAndSummary(t *testing.T) {
	d := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	l := Ledger{Days: []LedgerDay{
		{Day: d, Form: "contact", LedgerCount: LedgerCount{Answered: 3}, Accepted: 2, Spam: 1,
			LedgerDeliveries: LedgerDeliveries{Sent: 2}},
		{Day: d.Add(24 * time.Hour), Form: "contact", LedgerCount: LedgerCount{Answered: 1}, Accepted: 1, Undelivered: 1,
			Mismatches: []string{MismatchUndelivered}},
		{Day: d, Form: "jobs", LedgerCount: LedgerCount{Answered: 9}},
	}}
	want := "4 answered, 3 accepted, 1 spam, 0 quarantined; deliveries 2 sent, 0 pending, 0 parked, 0 dead; " +
		"MISMATCH: 1 accepted submission without a delivery"
	if got := l.Total("contact").Summary(); got != want {
		t.Errorf("summary = %q\nwant %q", got, want)
	}
}

// countingLedger answers a fixed ledger and counts the reads.
type countingLedger struct {
	recordingLedger
	rows  LedgerRows
	reads int
}

func (c *countingLedger) LedgerCounts(context.Context, time.Time, time.Time) ([]LedgerCount, error) {
	return nil, nil
}

func (c *countingLedger) LedgerRows(context.Context, time.Time, time.Time) (LedgerRows, error) {
	c.reads++
	return c.rows, nil
}

// The alert source reports a mismatch per form and day while it holds, reading the
// ledger at most every Every however often it is polled.
func TestLedgerAlertSourceReportsAndReadsSparingly(t *testing.T) {
	now := time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
	st := &countingLedger{rows: LedgerRows{Undelivered: []LedgerFormDay{{Day: UTCDay(now), Form: "leads", Count: 2}}}}
	src := NewLedgerAlertSource(LedgerAlertConfig{Store: st, Checked: func(f string) bool { return f == "leads" }, Every: time.Minute})
	want := []AlertCondition{{Kind: AlertLedgerMismatch, Key: "leads/2030-01-02", Form: "leads", Affected: 2, Since: UTCDay(now),
		Summary: "lead ledger of form leads on 2030-01-02 (UTC): 2 accepted submissions without a delivery"}}
	for _, at := range []time.Time{now, now.Add(30 * time.Second)} {
		got, err := src.Conditions(context.Background(), at)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("conditions at %s = %+v (%v), want %+v", at, got, err, want)
		}
	}
	if st.reads != 1 {
		t.Errorf("%d reads within a minute, want 1", st.reads)
	}
	src.(LedgerInvalidator).Invalidate() // an operator read the ledger: the next poll reads too
	if _, err := src.Conditions(context.Background(), now.Add(40*time.Second)); err != nil || st.reads != 2 {
		t.Fatalf("after Invalidate: %v, %d reads; want a second read", err, st.reads)
	}
	st.rows = LedgerRows{} // the lost lead was handled: the condition goes
	got, err := src.Conditions(context.Background(), now.Add(40*time.Second+time.Minute))
	if err != nil || len(got) != 0 || st.reads != 3 {
		t.Errorf("after Every: %+v (%v), %d reads; want none and a third read", got, err, st.reads)
	}
}
