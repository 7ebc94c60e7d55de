package outbox

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// LedgerParked is the status of a delivery waiting on a parked destination
// (docs/operations.md, "Parked destinations"). The ledger counts it by its stored name,
// so it needs no more than the string.
const LedgerParked DeliveryStatus = "parked"

// Ledger mismatch kinds (LedgerDay.Mismatches).
const (
	// MismatchNotStored: more posts were answered success than the day's rows, the
	// spool and erasures account for.
	MismatchNotStored = "answered_not_stored"
	// MismatchUndelivered: an accepted submission of a form whose every accepted post
	// must get a delivery has none.
	MismatchUndelivered = "accepted_without_delivery"
)

// LedgerGrace is how long after its UTC midnight a day counts as closed: long enough for
// the last answers of the day to be flushed (DefaultLedgerFlush) and its spool to be
// replayed when the store answers.
const LedgerGrace = 15 * time.Minute

// LedgerDeliveries counts deliveries by the ledger's columns. Pending holds pending,
// failed (retry scheduled) and sending ones.
type LedgerDeliveries struct {
	Sent, Pending, Parked, Dead, Skipped int64
}

func (d *LedgerDeliveries) add(status DeliveryStatus, n int64) {
	switch status {
	case DeliverySent:
		d.Sent += n
	case DeliveryPending, DeliveryFailed, DeliverySending:
		d.Pending += n
	case LedgerParked:
		d.Parked += n
	case DeliveryDead:
		d.Dead += n
	case DeliverySkipped:
		d.Skipped += n
	}
}

// LedgerRoute is one route's deliveries on a ledger day.
type LedgerRoute struct {
	Route string
	LedgerDeliveries
}

// LedgerDay is one form's line of the ledger for one UTC day.
type LedgerDay struct {
	Day  time.Time
	Form string
	// Closed: the day ended more than LedgerGrace ago; only then is MismatchNotStored
	// looked for.
	Closed bool
	// Checked: the day is within the retention horizon, so missing rows mean a loss.
	Checked bool
	LedgerCount
	Accepted, Spam, Quarantined int64
	Erased                      int64
	// Undelivered counts accepted submissions without a delivery (LedgerRows), reported
	// as a mismatch only for the forms LedgerQuery.Checked names.
	Undelivered int64
	// Unaccounted is how many answered posts the rows, the spool and erasures do not
	// account for (0 unless MismatchNotStored).
	Unaccounted int64
	LedgerDeliveries
	Routes     []LedgerRoute
	Mismatches []string
}

// Stored is the day's stored submissions of every status.
func (d LedgerDay) Stored() int64 { return d.Accepted + d.Spam + d.Quarantined }

// LedgerQuery says which days to build and what the caller knows of the forms.
type LedgerQuery struct {
	// Days is how many UTC days, ending with today's (Now's), to build. Default 7.
	Days int
	Now  time.Time
	// Until, when set, ends the range with the UTC day of the instant before it instead
	// of today's (a digest's period); Now still judges which days are closed.
	Until time.Time
	// Forms, when not empty, limits the ledger to these forms.
	Forms []string
	// Checked reports whether every accepted post of form must get a delivery: the form
	// has a route that plans one for any post (not store_only, not only digests, not only
	// guarded routes beside a digest). Nil: no form is checked.
	Checked func(form string) bool
	// Horizon is the retention (0: none): rows of days older than it may have been pruned
	// on purpose, so those days are shown but never flagged.
	Horizon time.Duration
}

// Ledger is the ledger of a range of days, oldest day first, then by form.
type Ledger struct {
	From, Until time.Time
	Days        []LedgerDay
}

// Mismatched returns the lines with a mismatch.
func (l Ledger) Mismatched() []LedgerDay {
	var out []LedgerDay
	for _, d := range l.Days {
		if len(d.Mismatches) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// BuildLedger reads the counters, then the rows, and puts them side by side. The order
// matters: a post's answer is counted after its row committed, so counters read before
// the rows never count a post whose row the read misses, and a flush in between cannot
// make a day look short.
func BuildLedger(ctx context.Context, store LedgerStore, q LedgerQuery) (Ledger, error) {
	if q.Days <= 0 {
		q.Days = 7
	}
	last := q.Now
	if !q.Until.IsZero() {
		last = q.Until.Add(-time.Nanosecond)
	}
	until := UTCDay(last).Add(24 * time.Hour)
	from := until.Add(-time.Duration(q.Days) * 24 * time.Hour)
	counts, err := store.LedgerCounts(ctx, from, until)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	rows, err := store.LedgerRows(ctx, from, until)
	if err != nil {
		return Ledger{}, fmt.Errorf("ledger: %w", err)
	}
	return assembleLedger(from, until, counts, rows, q), nil
}

func assembleLedger(from, until time.Time, counts []LedgerCount, rows LedgerRows, q LedgerQuery) Ledger {
	want := map[string]bool{}
	for _, f := range q.Forms {
		want[f] = true
	}
	lines := map[ledgerKey]*LedgerDay{}
	routes := map[ledgerKey]map[string]*LedgerRoute{}
	line := func(day time.Time, form string) *LedgerDay {
		if len(want) > 0 && !want[form] || day.Before(from) || !day.Before(until) {
			return nil
		}
		k := ledgerKey{day: day.UTC(), form: form}
		if lines[k] == nil {
			lines[k] = &LedgerDay{Day: k.day, Form: form}
			lines[k].LedgerCount = LedgerCount{Day: k.day, Form: form}
		}
		return lines[k]
	}
	for _, c := range counts {
		if l := line(c.Day, c.Form); l != nil {
			l.Answered += c.Answered
			l.Spooled += c.Spooled
			l.Replayed += c.Replayed
		}
	}
	for _, s := range rows.Submissions {
		l := line(s.Day, s.Form)
		if l == nil {
			continue
		}
		switch s.Status {
		case SubmissionAccepted:
			l.Accepted += s.Count
		case SubmissionSpam:
			l.Spam += s.Count
		case SubmissionQuarantined:
			l.Quarantined += s.Count
		}
	}
	for _, d := range rows.Deliveries {
		l := line(d.Day, d.Form)
		if l == nil {
			continue
		}
		l.add(d.Status, d.Count)
		k := ledgerKey{day: l.Day, form: l.Form}
		if routes[k] == nil {
			routes[k] = map[string]*LedgerRoute{}
		}
		r := routes[k][d.Route]
		if r == nil {
			r = &LedgerRoute{Route: d.Route}
			routes[k][d.Route] = r
		}
		r.add(d.Status, d.Count)
	}
	for _, u := range rows.Undelivered {
		if l := line(u.Day, u.Form); l != nil {
			l.Undelivered += u.Count
		}
	}
	for _, e := range rows.Erased {
		if l := line(e.Day, e.Form); l != nil {
			l.Erased += e.Count
		}
	}

	out := Ledger{From: from, Until: until}
	for k, l := range lines {
		for _, r := range routes[k] {
			l.Routes = append(l.Routes, *r)
		}
		sort.Slice(l.Routes, func(i, j int) bool { return l.Routes[i].Route < l.Routes[j].Route })
		judge(l, q)
		out.Days = append(out.Days, *l)
	}
	sort.Slice(out.Days, func(i, j int) bool {
		a, b := out.Days[i], out.Days[j]
		if !a.Day.Equal(b.Day) {
			return a.Day.Before(b.Day)
		}
		return a.Form < b.Form
	})
	return out
}

// judge flags the line's mismatches. Answered posts are accounted for by the rows, by
// the spool (spooled and not yet replayed) and by erasures: answered <= stored +
// spooled - replayed + erased holds whatever the counters lost (LedgerCounter), since a
// lost count lowers answered with its spooled part, and replayed only counts rows that
// are among the stored ones.
func judge(l *LedgerDay, q LedgerQuery) {
	l.Closed = !q.Now.Before(l.Day.Add(24*time.Hour + LedgerGrace))
	l.Checked = q.Horizon <= 0 || !l.Day.Before(q.Now.Add(-q.Horizon))
	if !l.Checked {
		return
	}
	if l.Closed {
		if short := l.Answered - (l.Stored() + l.Spooled - l.Replayed + l.Erased); short > 0 {
			l.Unaccounted = short
			l.Mismatches = append(l.Mismatches, MismatchNotStored)
		}
	}
	if l.Undelivered > 0 && q.Checked != nil && q.Checked(l.Form) {
		l.Mismatches = append(l.Mismatches, MismatchUndelivered)
	}
}

// DescribeMismatches says a line's mismatches in words, one phrase each, for the CLI,
// the inbox and alert texts alike (counts only, never visitor data).
func DescribeMismatches(mismatches []string, unaccounted, undelivered int64) []string {
	var out []string
	for _, m := range mismatches {
		switch m {
		case MismatchNotStored:
			out = append(out, fmt.Sprintf("%d answered %s not stored", unaccounted, plural(unaccounted, "post", "posts")))
		case MismatchUndelivered:
			out = append(out, fmt.Sprintf("%d accepted %s without a delivery", undelivered, plural(undelivered, "submission", "submissions")))
		default:
			out = append(out, m)
		}
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Total sums form's lines (every form's when form is ""): the counts, and the
// mismatches each line found.
func (l Ledger) Total(form string) LedgerDay {
	t := LedgerDay{Form: form}
	seen := map[string]bool{}
	for _, d := range l.Days {
		if form != "" && d.Form != form {
			continue
		}
		t.Answered += d.Answered
		t.Spooled += d.Spooled
		t.Replayed += d.Replayed
		t.Accepted += d.Accepted
		t.Spam += d.Spam
		t.Quarantined += d.Quarantined
		t.Erased += d.Erased
		t.Undelivered += d.Undelivered
		t.Unaccounted += d.Unaccounted
		t.Sent += d.Sent
		t.Pending += d.Pending
		t.Parked += d.Parked
		t.Dead += d.Dead
		t.Skipped += d.Skipped
		for _, m := range d.Mismatches {
			if !seen[m] {
				seen[m] = true
				t.Mismatches = append(t.Mismatches, m)
			}
		}
	}
	return t
}

// Summary is the line in one sentence, for a digest e-mail: counts only.
func (d LedgerDay) Summary() string {
	check := "no mismatch"
	if len(d.Mismatches) > 0 {
		check = "MISMATCH: " + strings.Join(DescribeMismatches(d.Mismatches, d.Unaccounted, d.Undelivered), ", ")
	}
	return fmt.Sprintf("%d answered, %d accepted, %d spam, %d quarantined; deliveries %d sent, %d pending, %d parked, %d dead; %s",
		d.Answered, d.Accepted, d.Spam, d.Quarantined, d.Sent, d.Pending, d.Parked, d.Dead, check)
}

// LedgerPeriodSummary is form's ledger over the UTC days that [start, end) touches, in
// one line (a digest's period: outbox/digest). q gives Now, Checked and Horizon; its
// range fields are set here.
func LedgerPeriodSummary(ctx context.Context, store LedgerStore, q LedgerQuery, form string, start, end time.Time) (string, error) {
	first, last := UTCDay(start), UTCDay(end.Add(-time.Nanosecond))
	q.Until, q.Forms = end, []string{form}
	q.Days = int(last.Sub(first)/(24*time.Hour)) + 1
	l, err := BuildLedger(ctx, store, q)
	if err != nil {
		return "", err
	}
	return l.Total(form).Summary(), nil
}
