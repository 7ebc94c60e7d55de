package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// EnvChaosSubmissions sets the chaos suite's size: CI runs the default; a local run uses
// 10000, a soak 100000 (the drain bound grows with it).
const EnvChaosSubmissions = "FORM_OUTBOX_CHAOS_SUBMISSIONS"

const chaosDefaultSubmissions = 2000

// EnvChaosRate sets how many new submissions per second the clients start. The load is
// paced so that the chaos schedule (by progress) spreads over the run instead of finding
// it finished while the database is still down. Default 40/s: about 50 s at CI size.
const EnvChaosRate = "FORM_OUTBOX_CHAOS_RATE"

// chaosCaddyfile turns the SES and Resend pacing off (caddyfile_email.go: 14/s and 2/s by
// default, the real services' quotas): the fakes have no quota, and at the paced rates
// the email deliveries of a large run (scripts/soak) pile up far beyond its drain bound.
const chaosCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: chaos and the drills check delivery under faults by the retry schedule; e2e/park_test.go checks parking.
		park off
		storage postgres "{{DSN}}"
		worker {
			concurrency 16
			poll_interval 500ms
			lease 5s
			shutdown_grace 1s
		}
		retry {
			base 200ms
			max_delay 2s
			email_attempts 40
			webhook_attempts 40
		}
		email {
			from "Forms <forms@example.com>"
			ses {
				region eu-west-1
				access_key_id AKIDEXAMPLE
				secret_access_key chaos-secret
				endpoint {{SES}}
				timeout 2s
				# The fakes have no sending quota; the default pacing (SES 14/s, Resend 2/s)
				# would turn the drain of 2,000 e-mails into a rate test
				# (e2e/drill_ratelimit_test.go is one).
				rate off
			}
			resend {
				api_key re_chaos_key
				endpoint {{RESEND}}
				timeout 2s
				rate off
			}
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field message required
		notify email sales@example.com
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`

// flakyHook is a webhook receiver that answers 500 to 20% of requests and counts the
// 2xx answers per webhook-id (one id per delivery): more than one is a duplicate send.
type flakyHook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	ok   map[string]int
	errs atomic.Int64
}

func newFlakyHook(t *testing.T) *flakyHook {
	h := &flakyHook{ok: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if rand.IntN(100) < 20 {
			h.errs.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		h.mu.Lock()
		h.ok[r.Header.Get("webhook-id")]++
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// chaosClient posts one submission per key, retrying with the same idempotency key
// until it gets a 200, as a browser's retrying fetch would. Answers are recorded per key.
type chaosClient struct {
	target  func() string
	mu      sync.Mutex
	ok      map[string]string // key -> answered status
	retries atomic.Int64
	queued  atomic.Int64
	done    atomic.Int64
}

func (c *chaosClient) post(ctx context.Context, key string) {
	cl := &http.Client{Timeout: 10 * time.Second}
	for ctx.Err() == nil {
		req := keyedJSONPost(ctx, c.target()+"/contact", "chaos "+key, key)
		resp, err := cl.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				status := "accepted"
				if strings.Contains(string(body), `"queued"`) {
					status = "queued"
					c.queued.Add(1)
				}
				c.mu.Lock()
				c.ok[key] = status
				c.mu.Unlock()
				c.done.Add(1)
				return
			}
		}
		c.retries.Add(1)
		select { // back off a little, as a browser would, while Caddy restarts
		case <-ctx.Done():
		case <-time.After(time.Duration(20+rand.IntN(80)) * time.Millisecond):
		}
	}
}

// TestChaosNothingLost drives submissions through one Caddy on its own PostgreSQL while
// Caddy is killed (-9) and restarted, PostgreSQL is killed twice for a while, the fake
// SES fails, hangs and becomes unreachable (Resend takes over) and the webhook receiver
// fails 20% of requests. After a bounded drain: 0 submissions lost, 0 duplicated, every
// delivery sent or dead with a reason, and duplicate sends within the ambiguous attempts.
func TestChaosNothingLost(t *testing.T) {
	t.Parallel()
	n := chaosDefaultSubmissions
	if v := os.Getenv(EnvChaosSubmissions); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			t.Fatalf("%s=%q: want a number >= 100", EnvChaosSubmissions, v)
		}
	}
	rate := 40
	if v := os.Getenv(EnvChaosRate); v != "" {
		var err error
		if rate, err = strconv.Atoi(v); err != nil || rate < 1 {
			t.Fatalf("%s=%q: want a positive number", EnvChaosRate, v)
		}
	}
	pg := newPGCluster(t)
	ses := sesfake.New()
	defer ses.Close()
	var sesFailed, sesHung atomic.Int64
	ses.Func(func(int, sesfake.Request) (sesfake.Reply, bool) {
		switch r := rand.IntN(100); {
		case r < 30:
			sesFailed.Add(1)
			return sesfake.InternalError(), true
		case r < 35:
			sesHung.Add(1)
			return sesfake.Reply{Hang: true}, true
		}
		return sesfake.Reply{}, true
	})
	resend := resendfake.New()
	defer resend.Close()
	hook := newFlakyHook(t)

	cf := strings.NewReplacer("{{DSN}}", pg.DSN(), "{{SES}}", ses.URL(), "{{RESEND}}", resend.URL(),
		"{{HOOK}}", hook.srv.URL).Replace(chaosCaddyfile)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	clients := &chaosClient{target: func() string { return c.URL("") }, ok: map[string]string{}}
	// The load alone takes n/rate seconds; twice that plus 10 minutes leaves room for the
	// outages and a loaded machine without letting a stuck run hang forever.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+2*time.Duration(n/rate)*time.Second)
	defer cancel()
	keys := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				clients.post(ctx, k)
			}
		}()
	}
	go func() {
		pace := time.NewTicker(time.Second / time.Duration(rate))
		defer pace.Stop()
		for i := 0; i < n; i++ {
			<-pace.C
			keys <- fmt.Sprintf("chaos-%06d", i)
		}
		close(keys)
	}()
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()

	// The chaos schedule, by progress (answered submissions) so it scales with n; the
	// database outages last 10-20 s of wall time.
	type step struct {
		at   float64
		what string
		do   func()
	}
	var pgUpAt []time.Time
	kills := 0
	// lastFaultEnd is when the last fault ended: Caddy answering again after a kill,
	// PostgreSQL restarted, SES reachable again. The recovery time runs from it.
	var lastFaultEnd time.Time
	killCaddy := func() { c.Kill(); kills++; c.Restart() }
	pgDown := func() {
		pg.Kill()
		pgUpAt = append(pgUpAt, time.Now().Add(time.Duration(10+rand.IntN(10))*time.Second))
	}
	steps := []step{
		{0.05, "kill -9 caddy", killCaddy},
		{0.10, "kill postgres", pgDown},
		{0.20, "kill -9 caddy (database down)", killCaddy},
		{0.35, "ses unreachable", ses.Refuse},
		{0.45, "kill -9 caddy", killCaddy},
		{0.55, "kill postgres", pgDown},
		{0.65, "kill -9 caddy (database down)", killCaddy},
		{0.75, "ses back", func() {
			if err := ses.Resume(); err != nil {
				t.Fatalf("resume fake SES: %v", err)
			}
		}},
		{0.90, "kill -9 caddy", killCaddy},
	}
	pgRestarts := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for loadRunning := true; loadRunning || len(steps) > 0 || pgRestarts < len(pgUpAt); {
		select {
		case <-loadDone:
			loadRunning, loadDone = false, nil
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("chaos run did not finish: %d of %d answered", clients.done.Load(), n)
		}
		progress := float64(clients.done.Load()) / float64(n)
		if pgRestarts < len(pgUpAt) && !time.Now().Before(pgUpAt[pgRestarts]) {
			pg.Start()
			pgRestarts++
			lastFaultEnd = time.Now()
		}
		// Steps wait while the database is down, so the second outage starts after the
		// first ended; when the load ends first, the rest run anyway.
		if len(steps) > 0 && (progress >= steps[0].at || !loadRunning) && (pgRestarts == len(pgUpAt) || steps[0].what != "kill postgres") {
			t.Logf("%5.1f%%: %s", 100*progress, steps[0].what)
			steps[0].do()
			steps = steps[1:]
			lastFaultEnd = time.Now()
		}
	}

	// Bounded drain: everything answered is stored and every delivery settled.
	conn, err := pgx.Connect(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	count := func(q string) int {
		var v int
		if err := conn.QueryRow(context.Background(), q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}
	drain := 3*time.Minute + time.Duration(n/100)*time.Second
	drainFrom := time.Now()
	if err := waitFor(drain, func() bool {
		return count(`SELECT count(*) FROM submissions`) >= len(clients.ok) &&
			count(`SELECT count(*) FROM deliveries WHERE status NOT IN ('sent', 'dead')`) == 0
	}); err != nil {
		t.Errorf("drain: %v (submissions %d, unsettled deliveries %d)\n%s", err,
			count(`SELECT count(*) FROM submissions`),
			count(`SELECT count(*) FROM deliveries WHERE status NOT IN ('sent', 'dead')`), tail(c.Log(), 4000))
	}
	drained := time.Now()

	// Figures.
	rows, err := conn.Query(context.Background(), `SELECT idempotency_key FROM submissions`)
	if err != nil {
		t.Fatal(err)
	}
	keysStored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, k := range keysStored {
		stored[k]++
	}
	lost, dupSubs := 0, 0
	for k := range clients.ok {
		if stored[k] == 0 {
			lost++
		}
	}
	for _, v := range stored {
		if v > 1 {
			dupSubs += v - 1
		}
	}
	deliveries := count(`SELECT count(*) FROM deliveries`)
	sent := count(`SELECT count(*) FROM deliveries WHERE status = 'sent'`)
	dead := count(`SELECT count(*) FROM deliveries WHERE status = 'dead'`)
	deadNoReason := count(`SELECT count(*) FROM deliveries WHERE status = 'dead' AND last_error = ''`)
	unsettled := deliveries - sent - dead
	ambiguousRecorded := count(`SELECT count(*) FROM delivery_attempts WHERE outcome = 'ambiguous'`)
	// An attempt charged at claim with no attempt row is one whose process died mid-send:
	// its outcome is unknown, i.e. ambiguous too.
	ambiguousCrashed := count(`SELECT coalesce(sum(d.attempts - (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id)), 0) FROM deliveries d`)

	sends := map[string]int{}
	hook.mu.Lock()
	for id, k := range hook.ok {
		sends["webhook:"+id] += k
	}
	hook.mu.Unlock()
	for _, s := range ses.Sent() {
		sends["email:"+s.Email.Tag(sesTagName)]++
	}
	for _, e := range resend.Emails() {
		sends["email:"+e.Request.Header.Get("Idempotency-Key")]++
	}
	dupSends := 0
	for _, k := range sends {
		dupSends += k - 1
	}
	// A delivery marked sent must have reached its receiver at least once.
	rows, err = conn.Query(context.Background(), `SELECT route || ':' || id::text FROM deliveries WHERE status = 'sent'`)
	if err != nil {
		t.Fatal(err)
	}
	sentKeys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var sentUnseen []string
	for _, k := range sentKeys {
		if sends[k] == 0 {
			sentUnseen = append(sentUnseen, k)
		}
	}
	wantDeliveries := 2 * len(stored)

	t.Logf(`chaos figures
	submissions sent by clients    %8d
	answered 200 (of which queued) %8d (%d)
	client retries                 %8d
	caddy kill -9 / pg outages     %8d / %d
	stored submissions             %8d
	LOST                           %8d
	DUPLICATE submissions          %8d
	deliveries (want %6d)         %8d
	  sent / dead (no reason)      %8d / %d (%d)
	  unsettled                    %8d
	SES failed / hung (fake)       %8d / %d
	sends: SES / Resend / webhook  %8d / %d / %d (webhook 500s %d)
	duplicate sends                %8d
	ambiguous attempts             %8d (recorded %d + in flight at a kill %d)`,
		n, len(clients.ok), clients.queued.Load(), clients.retries.Load(), kills, len(pgUpAt),
		len(stored), lost, dupSubs, wantDeliveries, deliveries, sent, dead, deadNoReason, unsettled,
		sesFailed.Load(), sesHung.Load(), len(ses.Sent()), len(resend.Emails()), len(hook.ok), hook.errs.Load(),
		dupSends, ambiguousRecorded+ambiguousCrashed, ambiguousRecorded, ambiguousCrashed)

	if len(clients.ok) != n {
		t.Errorf("%d of %d submissions were never answered 200", n-len(clients.ok), n)
	}
	if deliveries != wantDeliveries {
		t.Errorf("%d deliveries for %d submissions, want %d", deliveries, len(stored), wantDeliveries)
	}
	if unsettled != 0 || deadNoReason != 0 {
		t.Errorf("%d deliveries neither sent nor dead; %d dead without a reason", unsettled, deadNoReason)
	}
	if kills < 5 || len(pgUpAt) < 2 {
		t.Errorf("chaos ran %d kills and %d database outages, want >= 5 and 2", kills, len(pgUpAt))
	}
	if len(sentUnseen) != 0 {
		t.Errorf("%d deliveries marked sent never reached a receiver, e.g. %s", len(sentUnseen), sentUnseen[0])
	}

	// publish fails the test on lost or duplicated submissions and on duplicate sends
	// beyond the ambiguous attempts, and writes the figures for scripts/soak and
	// scripts/drills (docs/drills.md).
	publish(t, drillResult{
		Drill:                chaosDrillName(n),
		Submissions:          n,
		Acknowledged:         len(clients.ok),
		Lost:                 lost,
		DuplicateSubmissions: dupSubs,
		DuplicateSends:       dupSends,
		AmbiguousAttempts:    ambiguousRecorded + ambiguousCrashed,
		RecoverySeconds:      drained.Sub(lastFaultEnd).Seconds(),
		Notes: fmt.Sprintf("%d submissions at %d/s; %d kill -9 of Caddy, %d PostgreSQL kills (10-20 s down each); "+
			"SES failed %d and hung %d times and was unreachable from 35%% to 75%% of the load (%d sent by SES, %d by Resend), "+
			"the webhook answered 500 %d times; %d answered queued, %d client retries; "+
			"%d deliveries: %d sent, %d dead with a reason; backlog drained %.1f s after the load ended",
			n, rate, kills, len(pgUpAt), sesFailed.Load(), sesHung.Load(), len(ses.Sent()), len(resend.Emails()),
			hook.errs.Load(), clients.queued.Load(), clients.retries.Load(), deliveries, sent, dead,
			drained.Sub(drainFrom).Seconds()),
	})
}

// chaosDrillName is the row TestChaosNothingLost publishes: a run of 100000 submissions
// or more is the soak of scripts/soak, any smaller one the chaos row.
func chaosDrillName(n int) string {
	if n >= 100000 {
		return "soak"
	}
	return "chaos"
}

// sesTagName is the EmailTag that carries the delivery id (providers/ses default).
const sesTagName = "outbox_id"

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
