package digest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/digest"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const inboxURL = "https://example.com/inbox"

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func at(t *testing.T, v string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func route(t *testing.T, spec string) digest.Route {
	t.Helper()
	s, err := digest.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return digest.Route{Form: "contact", Name: "email", Schedule: s, To: []string{"owner@example.com", "ops@example.com"},
		InboxURL: inboxURL, MaxAttempts: 8}
}

// accept stores an accepted contact submission created at when, with a message naming it.
func accept(t *testing.T, s outbox.Store, when time.Time, msg string) *outbox.Submission {
	t.Helper()
	sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(when), storetest.WithFields("name", "Ada", "message", msg))
	storetest.MustAccept(t, s, sub)
	return sub
}

// made is a digest as a user sees it: its period, its count and the e-mails written.
type made struct {
	Start, End  time.Time
	Submissions int
	Mails       []outbox.Payload
}

// digests reads every digest written, oldest first, with its deliveries' payloads.
func digests(t *testing.T, s outbox.Store) []made {
	t.Helper()
	ctx := ctxFor(t)
	evs, err := s.ListEvents(ctx, outbox.EventDigestCreated, -1)
	if err != nil {
		t.Fatal(err)
	}
	var out []made
	for i := len(evs) - 1; i >= 0; i-- {
		var d struct {
			PeriodStart time.Time `json:"period_start"`
			PeriodEnd   time.Time `json:"period_end"`
			Submissions int       `json:"submissions"`
		}
		if err := json.Unmarshal(evs[i].Data, &d); err != nil {
			t.Fatal(err)
		}
		m := made{Start: d.PeriodStart.UTC(), End: d.PeriodEnd.UTC(), Submissions: d.Submissions}
		ds, err := s.ListDeliveries(ctx, evs[i].SubmissionID)
		if err != nil {
			t.Fatal(err)
		}
		for _, del := range ds {
			if del.Route != "email" || del.Channel != outbox.ChannelEmail || del.Status != outbox.DeliveryPending {
				t.Errorf("digest delivery %+v: want a pending email of route email", del)
			}
			var p outbox.Payload
			if err := json.Unmarshal(del.Payload, &p); err != nil {
				t.Fatal(err)
			}
			m.Mails = append(m.Mails, p)
		}
		out = append(out, m)
	}
	return out
}

// lists reports whether a digest mail lists sub (its inbox link) and how often.
func lists(p outbox.Payload, sub *outbox.Submission) int {
	return strings.Count(p.Text, inboxURL+"/submissions/"+sub.ID.String())
}

func closeDue(t *testing.T, c *digest.Closer, now time.Time) {
	t.Helper()
	if err := c.CloseDue(ctxFor(t), now); err != nil {
		t.Fatalf("close due at %s: %v", now, err)
	}
}

func eachStore(t *testing.T, fn func(t *testing.T, s outbox.Store)) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

// TestBoundariesAndDaylightSaving closes daily Berlin periods around the spring change
// (29 March 2026): 08:00 local is 07:00Z before it and 06:00Z after it.
func TestBoundariesAndDaylightSaving(t *testing.T) {
	eachStore(t, func(t *testing.T, s outbox.Store) {
		r := route(t, "daily at 08:00 Europe/Berlin")
		c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
		closeDue(t, c, at(t, "2026-03-27T12:00:00Z")) // the route is seen: its first period starts 27 March 07:00Z

		last := accept(t, s, at(t, "2026-03-28T06:59:59Z"), "just before 08:00 CET")
		first := accept(t, s, at(t, "2026-03-28T07:00:00Z"), "at 08:00 CET")
		beforeDST := accept(t, s, at(t, "2026-03-29T05:59:59Z"), "07:59:59 CEST")
		afterDST := accept(t, s, at(t, "2026-03-29T06:00:00Z"), "08:00 CEST")

		closeDue(t, c, at(t, "2026-03-28T07:00:09Z")) // within the grace: nothing yet
		if got := digests(t, s); len(got) != 0 {
			t.Fatalf("digests within the grace = %+v, want none", got)
		}
		closeDue(t, c, at(t, "2026-03-28T07:00:10Z"))
		got := digests(t, s)
		if len(got) != 1 || !got[0].Start.Equal(at(t, "2026-03-27T07:00:00Z")) || !got[0].End.Equal(at(t, "2026-03-28T07:00:00Z")) ||
			got[0].Submissions != 1 || len(got[0].Mails) != 2 || lists(got[0].Mails[0], last) != 1 || lists(got[0].Mails[0], first) != 0 {
			t.Fatalf("digests after 28 March 08:00 CET = %+v, want one of 27 March listing only the 07:59:59 submission", got)
		}
		m := got[0].Mails[0]
		if m.To != "ops@example.com" || got[0].Mails[1].To != "owner@example.com" ||
			m.Subject != "Digest of form contact: 1 submission, 2026-03-27 08:00 – 2026-03-28 08:00 Europe/Berlin" {
			t.Errorf("mail = to %q subject %q", m.To, m.Subject)
		}
		if !strings.Contains(m.Text, "2026-03-28 07:59:59  name: Ada · message: just before 08:00 CET") ||
			!strings.Contains(m.HTML, `<a href="`+inboxURL+"/submissions/"+last.ID.String()+`">open</a>`) {
			t.Errorf("mail bodies do not show the summary line and link:\n%s\n%s", m.Text, m.HTML)
		}

		// The 23-hour period of the change: 28 March 07:00Z to 29 March 06:00Z.
		closeDue(t, c, at(t, "2026-03-29T06:00:10Z"))
		got = digests(t, s)
		if len(got) != 2 || !got[1].Start.Equal(at(t, "2026-03-28T07:00:00Z")) || !got[1].End.Equal(at(t, "2026-03-29T06:00:00Z")) ||
			got[1].Submissions != 2 || lists(got[1].Mails[0], first) != 1 || lists(got[1].Mails[0], beforeDST) != 1 || lists(got[1].Mails[0], afterDST) != 0 {
			t.Fatalf("digest of the DST day = %+v", got[1:])
		}
		if !strings.Contains(got[1].Mails[0].Subject, "2 submissions, 2026-03-28 08:00 – 2026-03-29 08:00 Europe/Berlin") {
			t.Errorf("subject = %q", got[1].Mails[0].Subject)
		}
		// Closing again changes nothing.
		closeDue(t, c, at(t, "2026-03-29T12:00:00Z"))
		if got := digests(t, s); len(got) != 2 {
			t.Errorf("digests after closing again = %d, want 2", len(got))
		}
	})
}

// TestLateCommit: a submission created inside a period but stored after that period's
// digest was written is listed by the next digest, marked late, and never twice. One
// stored after the boundary but within the grace is in its own period's digest.
func TestLateCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, s outbox.Store) {
		r := route(t, "hourly")
		c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
		closeDue(t, c, at(t, "2026-12-01T10:30:00Z"))
		onTime := accept(t, s, at(t, "2026-12-01T10:40:00Z"), "on time")
		// Stamped a second before 11:00, committed at 11:00:05: within the grace.
		inGrace := accept(t, s, at(t, "2026-12-01T10:59:59Z"), "in the grace")
		closeDue(t, c, at(t, "2026-12-01T11:00:10Z"))
		// Stamped at 10:59:58, committed only after the 10:00 digest was written.
		late := accept(t, s, at(t, "2026-12-01T10:59:58Z"), "late")
		closeDue(t, c, at(t, "2026-12-01T11:30:00Z")) // the 11:00 period is still open
		got := digests(t, s)
		if len(got) != 1 || got[0].Submissions != 2 || lists(got[0].Mails[0], onTime) != 1 || lists(got[0].Mails[0], inGrace) != 1 || lists(got[0].Mails[0], late) != 0 {
			t.Fatalf("first digest = %+v, want the on-time and in-grace submissions", got)
		}
		closeDue(t, c, at(t, "2026-12-01T12:00:10Z"))
		got = digests(t, s)
		if len(got) != 2 || !got[1].Start.Equal(at(t, "2026-12-01T11:00:00Z")) || got[1].Submissions != 1 || lists(got[1].Mails[0], late) != 1 {
			t.Fatalf("second digest = %+v, want the 11:00 period listing the late submission", got)
		}
		if !strings.Contains(got[1].Mails[0].Text, "2026-12-01 10:59:58 (late: from an earlier period)") {
			t.Errorf("late submission not marked:\n%s", got[1].Mails[0].Text)
		}
		closeDue(t, c, at(t, "2026-12-01T14:00:10Z"))
		if got := digests(t, s); len(got) != 2 {
			t.Errorf("digests = %d after two empty periods, want still 2 (no mail for an empty period)", len(got))
		}
	})
}

// TestReleasedSubmissionIsListedNext: a quarantined submission is in no digest; released
// by the operator after its period's digest, it is listed by the next one, marked late.
func TestReleasedSubmissionIsListedNext(t *testing.T) {
	eachStore(t, func(t *testing.T, s outbox.Store) {
		c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{route(t, "hourly")}})
		closeDue(t, c, at(t, "2026-12-01T10:00:00Z"))
		ok := accept(t, s, at(t, "2026-12-01T10:10:00Z"), "ok")
		held := storetest.NewSubmission("contact", storetest.WithCreatedAt(at(t, "2026-12-01T10:20:00Z")),
			storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
		storetest.MustAccept(t, s, held)
		closeDue(t, c, at(t, "2026-12-01T11:00:10Z"))
		got := digests(t, s)
		if len(got) != 1 || got[0].Submissions != 1 || lists(got[0].Mails[0], ok) != 1 || lists(got[0].Mails[0], held) != 0 {
			t.Fatalf("digests = %+v, want the accepted submission only", got)
		}
		if err := s.Act(ctxFor(t), outbox.Action{Kind: outbox.ActionRelease, SubmissionID: held.ID, User: "op", Now: at(t, "2026-12-01T11:30:00Z")}); err != nil {
			t.Fatal(err)
		}
		closeDue(t, c, at(t, "2026-12-01T12:00:10Z"))
		got = digests(t, s)
		if len(got) != 2 || got[1].Submissions != 1 || lists(got[1].Mails[0], held) != 1 || !strings.Contains(got[1].Mails[0].Text, "(late: from an earlier period)") {
			t.Fatalf("digests = %+v, want the released submission in the 11:00 digest, marked late", got)
		}
	})
}

// TestRestartAcrossBoundaries: a closer started after several periods closed writes the
// digest of each missed period that has submissions, and none for the empty ones.
func TestRestartAcrossBoundaries(t *testing.T) {
	eachStore(t, func(t *testing.T, s outbox.Store) {
		r := route(t, "every 30m")
		old := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
		closeDue(t, old, at(t, "2026-12-01T08:05:00Z"))
		a := accept(t, s, at(t, "2026-12-01T08:10:00Z"), "a")
		closeDue(t, old, at(t, "2026-12-01T08:30:10Z"))
		// The process stops; posts keep arriving (another instance's intake, or the spool).
		b := accept(t, s, at(t, "2026-12-01T08:45:00Z"), "b")
		c2 := accept(t, s, at(t, "2026-12-01T09:50:00Z"), "c")
		d := accept(t, s, at(t, "2026-12-01T10:01:00Z"), "d") // still open at restart

		restarted := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
		closeDue(t, restarted, at(t, "2026-12-01T10:15:00Z"))
		got := digests(t, s)
		want := []struct {
			start string
			sub   *outbox.Submission
		}{{"2026-12-01T08:00:00Z", a}, {"2026-12-01T08:30:00Z", b}, {"2026-12-01T09:30:00Z", c2}}
		if len(got) != len(want) {
			t.Fatalf("digests = %+v, want %d", got, len(want))
		}
		for i, w := range want {
			if !got[i].Start.Equal(at(t, w.start)) || got[i].Submissions != 1 || lists(got[i].Mails[0], w.sub) != 1 {
				t.Errorf("digest %d = %+v, want period %s listing %s", i, got[i], w.start, w.sub.ID)
			}
		}
		for _, m := range got {
			if lists(m.Mails[0], d) != 0 {
				t.Errorf("the open period's submission was listed early")
			}
		}
	})
}

// TestFirstDigestStartsWithTheRoute: submissions from before the route was first seen
// are not listed (a digest route added to a busy form does not mail its history).
func TestFirstDigestStartsWithTheRoute(t *testing.T) {
	eachStore(t, func(t *testing.T, s outbox.Store) {
		old := accept(t, s, at(t, "2026-11-30T10:00:00Z"), "history")
		r := route(t, "hourly")
		c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
		closeDue(t, c, at(t, "2026-12-01T10:20:00Z"))
		fresh := accept(t, s, at(t, "2026-12-01T10:25:00Z"), "fresh")
		closeDue(t, c, at(t, "2026-12-01T11:00:10Z"))
		got := digests(t, s)
		if len(got) != 1 || got[0].Submissions != 1 || lists(got[0].Mails[0], fresh) != 1 || lists(got[0].Mails[0], old) != 0 {
			t.Fatalf("digests = %+v, want one listing only the submission after the route appeared", got)
		}
	})
}

// TestLinkOnlyKeepsVisitorDataOut: content link lists time and link, no field.
func TestLinkOnlyKeepsVisitorDataOut(t *testing.T) {
	s := storetest.OpenSQLite(t)
	r := route(t, "hourly")
	r.LinkOnly = true
	c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
	closeDue(t, c, at(t, "2026-12-01T10:20:00Z"))
	sub := accept(t, s, at(t, "2026-12-01T10:25:00Z"), "secret <b>text</b>")
	closeDue(t, c, at(t, "2026-12-01T11:00:10Z"))
	got := digests(t, s)
	if len(got) != 1 || lists(got[0].Mails[0], sub) != 1 {
		t.Fatalf("digests = %+v", got)
	}
	for _, body := range []string{got[0].Mails[0].Text, got[0].Mails[0].HTML} {
		if strings.Contains(body, "secret") || strings.Contains(body, "Ada") {
			t.Errorf("link-only digest shows visitor data:\n%s", body)
		}
	}
}

// TestHTMLEscapesVisitorText: a submitted tag arrives as text in the HTML part.
func TestHTMLEscapesVisitorText(t *testing.T) {
	s := storetest.OpenSQLite(t)
	c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{route(t, "hourly")}})
	closeDue(t, c, at(t, "2026-12-01T10:20:00Z"))
	accept(t, s, at(t, "2026-12-01T10:25:00Z"), "<script>alert(1)</script>\nsecond line")
	closeDue(t, c, at(t, "2026-12-01T11:00:10Z"))
	got := digests(t, s)
	if len(got) != 1 {
		t.Fatalf("digests = %+v", got)
	}
	m := got[0].Mails[0]
	if strings.Contains(m.HTML, "<script>") || !strings.Contains(m.HTML, "&lt;script&gt;alert(1)&lt;/script&gt; second line") {
		t.Errorf("HTML part:\n%s", m.HTML)
	}
	if !strings.Contains(m.Text, "message: <script>alert(1)</script> second line\n") {
		t.Errorf("text part does not keep the summary on one line:\n%s", m.Text)
	}
}

// countingStore counts the digest queries a closer makes.
type countingStore struct {
	outbox.DigestStore
	undigested, periods, since atomic.Int64
}

func (c *countingStore) UndigestedSubmissions(ctx context.Context, form, route string, from, until time.Time) ([]outbox.DigestItem, error) {
	c.undigested.Add(1)
	return c.DigestStore.UndigestedSubmissions(ctx, form, route, from, until)
}

func (c *countingStore) DigestPeriods(ctx context.Context, form, route string, from, until time.Time) ([]time.Time, error) {
	c.periods.Add(1)
	return c.DigestStore.DigestPeriods(ctx, form, route, from, until)
}

func (c *countingStore) DigestRouteSince(ctx context.Context, form, route string, since time.Time) (time.Time, error) {
	c.since.Add(1)
	return c.DigestStore.DigestRouteSince(ctx, form, route, since)
}

// TestLoopWakesOncePerBoundary runs the closer's own loop on a manual clock: an idle
// route costs one query per period boundary and nothing in between, and a period with a
// submission gets its digest at its end plus the grace.
func TestLoopWakesOncePerBoundary(t *testing.T) {
	s := storetest.OpenSQLite(t)
	counted := &countingStore{DigestStore: s}
	clock := outbox.NewManualClock(at(t, "2026-12-01T10:00:30Z"))
	var created atomic.Int64
	c := digest.NewCloser(digest.Config{Store: counted, Routes: []digest.Route{route(t, "every 1m")},
		Now: clock.Now, After: clock.After, OnCreated: func() { created.Add(1) }})
	c.Start(context.Background())
	defer c.Stop()
	// waitIdle waits until the loop waits on the clock again (its pass, queries
	// included, is over), then checks the queries it made.
	waitIdle := func(queries int64) {
		t.Helper()
		if !clock.AwaitWaiters(1, 30*time.Second) {
			t.Fatalf("the closer is not waiting on the clock (want %d queries)", queries)
		}
		if got, since := counted.undigested.Load(), counted.since.Load(); got != queries || since != 1 {
			t.Fatalf("after the pass: %d UndigestedSubmissions and %d DigestRouteSince queries, want %d and 1", got, since, queries)
		}
	}
	// The first pass records the route; its first period (10:00) has not closed yet.
	waitIdle(0)
	// An hour of idle minutes: one query each, woken at each boundary plus the grace.
	for i := int64(1); i <= 60; i++ {
		clock.Advance(time.Minute)
		waitIdle(i)
	}
	if n := counted.periods.Load(); n != 0 {
		t.Errorf("idle hour made %d DigestPeriods queries, want 0", n)
	}
	if n := counted.since.Load(); n != 1 {
		t.Errorf("DigestRouteSince ran %d times, want once", n)
	}
	// Now at 11:00:30; the 11:00 period gets a submission and closes at 11:01:10.
	sub := accept(t, s, at(t, "2026-12-01T11:00:40Z"), "in the loop")
	clock.Set(at(t, "2026-12-01T11:01:09Z")) // before the wake-up: the waiter stays
	if clock.Waiters() != 1 || counted.undigested.Load() != 60 {
		t.Fatalf("the closer woke before the period's end plus the grace")
	}
	clock.Set(at(t, "2026-12-01T11:01:10Z"))
	waitIdle(61)
	got := digests(t, s)
	if len(got) != 1 || lists(got[0].Mails[0], sub) != 1 || created.Load() != 1 {
		t.Fatalf("digests = %+v, OnCreated %d; want one listing the submission", got, created.Load())
	}
}

// race runs two closers (on two stores of one database, as two instances would) against
// each other over several periods and checks that each period got one digest and each
// submission was listed exactly once.
func race(t *testing.T, a, b outbox.Store) {
	r := route(t, "every 1m")
	start := at(t, "2026-12-01T10:00:00Z")
	// Three closers per store, as if each store were shared by three instances.
	var closers []*digest.Closer
	for _, s := range []outbox.Store{a, b, a, b, a, b} {
		c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{r}})
		closeDue(t, c, start)
		closers = append(closers, c)
	}
	var subs []*outbox.Submission
	const periods = 6
	for p := range periods {
		for i := range 3 {
			subs = append(subs, accept(t, a, start.Add(time.Duration(p)*time.Minute+time.Duration(i*10)*time.Second), fmt.Sprintf("p%d-%d", p, i)))
		}
		now := start.Add(time.Duration(p+1)*time.Minute + 10*time.Second)
		var wg sync.WaitGroup
		for _, c := range closers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.CloseDue(context.Background(), now); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	got := digests(t, a)
	if len(got) != periods {
		t.Fatalf("%d digests for %d periods: %+v", len(got), periods, got)
	}
	for i, m := range got {
		if !m.Start.Equal(start.Add(time.Duration(i)*time.Minute)) || m.Submissions != 3 || len(m.Mails) != 2 {
			t.Errorf("digest %d = %+v, want the period's 3 submissions, 2 mails", i, m)
		}
	}
	for _, sub := range subs {
		n := 0
		for _, m := range got {
			n += lists(m.Mails[0], sub)
		}
		if n != 1 {
			t.Errorf("submission %s listed %d times, want once", sub.ID, n)
		}
	}
}

func TestTwoClosersOnOnePostgres(t *testing.T) {
	t.Parallel()
	cfg := storetest.NewPostgresSchema(t)
	race(t, storetest.OpenPostgresAt(t, cfg), storetest.OpenPostgresAt(t, cfg))
}

func TestTwoClosersOnOneSQLiteFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "outbox.db")
	race(t, storetest.OpenSQLiteAt(t, path), storetest.OpenSQLiteAt(t, path))
}

// TestDigestCarriesTheLedgerLine: the digest ends with the period's lead ledger in one
// line, counts only, as both parts of the e-mail show it.
func TestDigestCarriesTheLedgerLine(t *testing.T) {
	s := storetest.OpenSQLite(t)
	c := digest.NewCloser(digest.Config{Store: s, Routes: []digest.Route{route(t, "hourly")},
		LedgerLine: func(ctx context.Context, form string, start, end time.Time) (string, error) {
			return outbox.LedgerPeriodSummary(ctx, s, outbox.LedgerQuery{Now: end}, form, start, end)
		}})
	closeDue(t, c, at(t, "2026-12-01T10:20:00Z"))
	accept(t, s, at(t, "2026-12-01T10:25:00Z"), "one")
	accept(t, s, at(t, "2026-12-01T10:26:00Z"), "two")
	closeDue(t, c, at(t, "2026-12-01T11:00:10Z"))
	got := digests(t, s)
	if len(got) != 1 {
		t.Fatalf("digests = %+v", got)
	}
	want := "Lead ledger (UTC days of this period): 0 answered, 2 accepted, 0 spam, 0 quarantined; " +
		"deliveries 0 sent, 0 pending, 0 parked, 0 dead; no mismatch"
	m := got[0].Mails[0]
	if !strings.Contains(m.Text, want+"\n") || !strings.Contains(m.HTML, want+"</p>") {
		t.Errorf("digest lacks the ledger line %q:\n%s\n%s", want, m.Text, m.HTML)
	}
}
