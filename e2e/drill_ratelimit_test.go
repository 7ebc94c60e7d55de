package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/resendfake"
	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

// rateDrillCaddyfile is one instance on a PostgreSQL schema: {{WORKER}} is "off" for the
// intake-only instance that takes the backlog while sending is down, or a worker block;
// {{PROVIDER}} is the email provider's block, without a rate option so that its default
// applies; {{HOOK}} is a webhook receiver every submission also notifies, unpaced.
const rateDrillCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: this drill checks pacing and retries under throttling; e2e/park_test.go checks parking.
		park off
		storage postgres "{{DSN}}" {
			schema {{SCHEMA}}
		}
		worker {{WORKER}}
		email {
			from forms@example.com
			{{PROVIDER}}
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

// envDrillFull makes the rate-limit drill drain the full 2,000 e-mails through
// SES (about 143s at 14/s) instead of the CI-sized backlog.
const envDrillFull = "FORM_OUTBOX_DRILL_FULL"

// drillRateLimits stores a backlog while no worker runs (an outage of the sending
// side), then starts a worker against a fake provider that enforces its real limit and
// answers 429 past it: SES at 14/s, Resend at 2/s. With the providers' default rates
// (providers/ratelimit) the drain gets no 429 and takes the time the rate implies. Each
// submission also notifies a webhook: paced at claim time (docs/design.md, "Pacing"),
// the waiting e-mails hold no send slot, so every webhook is sent within seconds of the
// worker's start rather than behind the e-mails.
func drillRateLimits(t *testing.T) {
	sesBacklog := 400 // 29 s at 14/s: bounded for CI
	if os.Getenv(envDrillFull) != "" {
		sesBacklog = 2000
	}
	cases := []struct {
		name    string
		backlog int
		rate    float64
		start   func(t *testing.T) (provider string, throttled func() int, sent func() []time.Time)
	}{
		{"ses", sesBacklog, 14, func(t *testing.T) (string, func() int, func() []time.Time) {
			srv := sesfake.New()
			t.Cleanup(srv.Close)
			srv.EnforceRate(14)
			return "ses {\n\t\t\t\tregion eu-west-1\n\t\t\t\taccess_key_id AKIDEXAMPLE\n\t\t\t\tsecret_access_key e2e-secret\n\t\t\t\tendpoint " +
					srv.URL() + "\n\t\t\t}", srv.Throttled, func() []time.Time {
					var at []time.Time
					for _, s := range srv.Sent() {
						at = append(at, s.Request.At)
					}
					return at
				}
		}},
		{"resend", 30, 2, func(t *testing.T) (string, func() int, func() []time.Time) {
			srv := resendfake.New()
			t.Cleanup(srv.Close)
			srv.EnforceRate(2)
			return "resend {\n\t\t\t\tapi_key re_e2e\n\t\t\t\tendpoint " + srv.URL() + "\n\t\t\t}", srv.Throttled, func() []time.Time {
				var at []time.Time
				for _, s := range srv.Emails() {
					at = append(at, s.Request.At)
				}
				return at
			}
		}},
	}
	for _, c := range cases {
		// One case after the other: a parallel subtest would wait for a free slot among
		// all the parallel e2e tests while it holds up its drill chain.
		t.Run(c.name, func(t *testing.T) {
			provider, throttled, sent := c.start(t)
			hook := newReceiver(t)
			pc := storetest.NewPostgresSchemaName(t)
			cf := func(worker string) string {
				return strings.NewReplacer("{{DSN}}", pc.DSN, "{{SCHEMA}}", pc.Schema, "{{WORKER}}", worker,
					"{{PROVIDER}}", provider, "{{HOOK}}", hook.srv.URL).Replace(rateDrillCaddyfile)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()

			intake := newCaddy(t, caddyOpts{Caddyfile: cf("off")})
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, c.backlog)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1)) - 1; i < c.backlog; i = int(next.Add(1)) - 1 {
						if err := submit(ctx, []*caddyProc{intake}, 0, fmt.Sprintf("%s-%05d", c.name, i)); err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("backlog: %v", err)
			}
			conn := drillConn(t, ctx, pc.DSN, pc.Schema)
			if d := queryDeliveries(t, conn); d.total != 2*c.backlog || d.statuses["pending"] != 2*c.backlog {
				t.Fatalf("backlog stored: %+v, want %d pending", d, 2*c.backlog)
			}

			workerStart := time.Now()
			worker := newCaddy(t, caddyOpts{Caddyfile: cf("{\n\t\t\tpoll_interval 1s\n\t\t}")})
			want := time.Duration(float64(c.backlog-1) / c.rate * float64(time.Second))
			// The webhooks are not held up by the e-mails' pace: a fifth of the e-mail drain
			// (at least 10 s, for start-up on a loaded machine) is ample for all of them.
			hooksWithin := max(want/5, 10*time.Second)
			if err := waitFor(hooksWithin, func() bool { distinct, _, _ := hook.counts(); return distinct == c.backlog }); err != nil {
				distinct, _, _ := hook.counts()
				t.Fatalf("%d of %d webhooks sent within %v of the worker's start, behind the paced e-mails: %v",
					distinct, c.backlog, hooksWithin, err)
			}
			hooksTook := time.Since(workerStart)
			if err := waitFor(want+60*time.Second, func() bool { return queryDeliveries(t, conn).sent == 2*c.backlog }); err != nil {
				t.Fatalf("drain: %+v, %d throttled: %v\n%s", queryDeliveries(t, conn), throttled(), err, worker.Log())
			}
			at := sent()
			if len(at) != c.backlog {
				t.Fatalf("the provider accepted %d e-mails, want %d exactly once", len(at), c.backlog)
			}
			first, last := at[0], at[0]
			for _, a := range at {
				if a.Before(first) {
					first = a
				}
				if a.After(last) {
					last = a
				}
			}
			took := last.Sub(first)
			if n := throttled(); n != 0 {
				t.Errorf("%d sends were answered 429", n)
			}
			// Pacing never goes faster than the rate; on a loaded machine it may lag a little.
			if took < want*95/100 || took > want*115/100+2*time.Second {
				t.Errorf("drain of %d at %v/s took %v, want about %v", c.backlog, c.rate, took, want)
			}
			var attempts int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM delivery_attempts`).Scan(&attempts); err != nil {
				t.Fatal(err)
			}
			if attempts != 2*c.backlog {
				t.Errorf("%d attempts recorded for %d e-mails and %d webhooks: some were retried or charged for pacing",
					attempts, c.backlog, c.backlog)
			}
			publish(t, drillResult{
				Drill: "rate_limit_" + c.name, Submissions: c.backlog, Acknowledged: c.backlog,
				Lost: 2*c.backlog - queryDeliveries(t, conn).sent, DuplicateSubmissions: 0, DuplicateSends: 0,
				RecoverySeconds: took.Seconds(),
				Notes: fmt.Sprintf("A backlog of %d submissions stored by an intake-only instance, each an e-mail and a webhook: "+
					"the e-mails drain through a fake %s that answers 429 past %s/s; with the default rate option: "+
					"%d throttled, %d attempts for %d deliveries, e-mails drained in %.1fs (the rate implies %.1fs); "+
					"paced at claim time, all %d webhooks were sent %.1fs after the worker started.",
					c.backlog, c.name, strconv.FormatFloat(c.rate, 'f', -1, 64), throttled(),
					attempts, 2*c.backlog, took.Seconds(), want.Seconds(), c.backlog, hooksTook.Seconds()),
			})
		})
	}
}

// drillConn connects to the drill's schema, closed at cleanup.
func drillConn(t *testing.T, ctx context.Context, dsn, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
