package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// parkCaddyfile sends every post of the hook form to one webhook. Concurrency 1 makes
// the order of the sends the order of the claims, so the receiver can check that held
// leads resume in the order they came.
const parkCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		{{STORAGE}}
		worker {
			concurrency 1
			poll_interval 1s
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /hook {
		form hook
		field n required
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
	respond "static site"
}
`

// orderedReceiver is a webhook receiver that answers a status the test sets and records
// the n field of each post it accepted, in arrival order.
type orderedReceiver struct {
	srv    *httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	got    []string
	calls  atomic.Int32
}

var nField = regexp.MustCompile(`"n":"(\d+)"`)

func newOrderedReceiver(t *testing.T, status int) *orderedReceiver {
	r := &orderedReceiver{}
	r.status.Store(int32(status))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.calls.Add(1)
		st := int(r.status.Load())
		if st < 300 {
			r.mu.Lock()
			if m := nField.FindSubmatch(body); m != nil {
				r.got = append(r.got, string(m[1]))
			}
			r.mu.Unlock()
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *orderedReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// parkedDestinationsJSON is GET /form_outbox/destinations.
type parkedDestinationsJSON struct {
	Destinations []struct {
		Key, Channel, Label, Reason string
		Manual                      bool
		Held, Leads                 int
		NextProbe                   *time.Time `json:"next_probe_at"`
	}
}

// TestParkedWebhookHoldsLeadsAndResumesInOrder is the 410 story through the built Caddy
// on both stores: the first lead parks the webhook, the next 20 are held with no attempt
// spent (the rows say so), the parked destination shows on the admin API, the CLI and the
// metrics without the URL's secret path, and an unpark (the CLI on SQLite, the admin API
// on PostgreSQL) delivers all 21 in the order they came.
func TestParkedWebhookHoldsLeadsAndResumesInOrder(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			hook := newOrderedReceiver(t, http.StatusGone)
			hookURL := hook.srv.URL + "/in/s3cret-path-token"
			var storage string
			var count func(q string) int
			if store == "sqlite" {
				storage = "storage sqlite {{DIR}}/forms.db"
			} else {
				pc := storetest.NewPostgresSchemaName(t)
				storage = fmt.Sprintf("storage postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
				count = pgCounter(t, pc.DSN, pc.Schema)
			}
			cf := strings.NewReplacer("{{STORAGE}}", storage, "{{HOOK}}", hookURL).Replace(parkCaddyfile)
			p := newCaddy(t, caddyOpts{Caddyfile: cf})
			if store == "sqlite" {
				db := openSQLite(t, filepath.Join(p.dir, "forms.db"))
				count = func(q string) int {
					var n int
					if err := db.QueryRow(q).Scan(&n); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					return n
				}
			}
			waitCount := func(what, q string, want int) {
				t.Helper()
				if err := waitFor(30*time.Second, func() bool { return count(q) == want }); err != nil {
					t.Fatalf("%s: %s = %d, want %d\n%s", what, q, count(q), want, tail(p.Log(), 3000))
				}
			}

			// The first lead meets the 410: its destination parks, the lead is held with its
			// one attempt recorded and given back.
			postAdminForm(t, p, "/hook", url.Values{"n": {"00"}})
			waitCount("the first lead held", `SELECT count(*) FROM deliveries WHERE status = 'parked' AND attempts = 0`, 1)
			if n := count(`SELECT count(*) FROM delivery_attempts WHERE outcome = 'permanent' AND http_status = 410`); n != 1 {
				t.Fatalf("%d attempts with the 410, want 1", n)
			}
			// The next 20 are held when claimed, never sent.
			for i := 1; i <= 20; i++ {
				postAdminForm(t, p, "/hook", url.Values{"n": {fmt.Sprintf("%02d", i)}})
			}
			waitCount("21 leads held", `SELECT count(*) FROM deliveries WHERE status = 'parked' AND attempts = 0`, 21)
			if n := count(`SELECT count(*) FROM delivery_attempts`); n != 1 {
				t.Errorf("%d attempt rows, want only the first lead's", n)
			}
			if n := hook.calls.Load(); n != 1 {
				t.Errorf("the receiver was called %d times, want once", n)
			}

			var list parkedDestinationsJSON
			p.adminJSON(t, http.MethodGet, "/form_outbox/destinations", 200, &list)
			if len(list.Destinations) != 1 {
				t.Fatalf("parked destinations: %+v", list)
			}
			d := list.Destinations[0]
			if d.Channel != "webhook" || d.Held != 21 || d.Leads != 21 || d.Manual || d.NextProbe == nil ||
				!strings.HasPrefix(d.Key, "webhook:") || !strings.Contains(d.Reason, "410") {
				t.Errorf("parked destination %+v", d)
			}
			out := p.cli(t, true, "destinations")
			if !strings.Contains(out, d.Key) || !strings.Contains(out, "127.0.0.1") {
				t.Errorf("cli destinations:\n%s", out)
			}
			for _, shown := range []string{out, fmt.Sprint(list), tail(p.Log(), 1<<20)} {
				if strings.Contains(shown, "s3cret") {
					t.Errorf("the webhook URL's secret path is shown:\n%s", shown)
				}
			}
			p.waitMetric(t, 1, "form_outbox_destinations_parked", "channel", "webhook")
			p.waitMetric(t, 21, "form_outbox_deliveries_parked", "channel", "webhook")

			// The receiver is fixed; an operator unparks: all 21 arrive, in order.
			hook.status.Store(http.StatusOK)
			if store == "sqlite" {
				out = p.cli(t, true, "unpark", d.Key)
				if !strings.Contains(out, "unparked (21 deliveries resumed)") {
					t.Errorf("cli unpark printed %q", out)
				}
			} else {
				var res map[string]any
				p.adminJSON(t, http.MethodPost, "/form_outbox/destinations/unpark?key="+url.QueryEscape(d.Key), 200, &res)
				if res["resumed"] != float64(21) {
					t.Errorf("unpark answered %v", res)
				}
			}
			// Each on its first charged attempt: the first lead's 410 was given back.
			waitCount("21 leads sent", `SELECT count(*) FROM deliveries WHERE status = 'sent' AND attempts = 1`, 21)
			var want []string
			for i := 0; i <= 20; i++ {
				want = append(want, fmt.Sprintf("%02d", i))
			}
			if got := hook.received(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("the receiver got %v, want %v", got, want)
			}
			p.adminJSON(t, http.MethodGet, "/form_outbox/destinations", 200, &list)
			if len(list.Destinations) != 0 {
				t.Errorf("still parked after unpark: %+v", list)
			}
			p.waitMetric(t, 0, "form_outbox_deliveries_parked", "channel", "webhook")
		})
	}
}

// pgCounter answers count queries against the schema of a Caddy's PostgreSQL store.
func pgCounter(t *testing.T, dsn, schema string) func(q string) int {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var mu sync.Mutex
	return func(q string) int {
		mu.Lock()
		defer mu.Unlock()
		var n int
		if err := conn.QueryRow(context.Background(), q).Scan(&n); err != nil {
			// The schema's tables appear once Caddy has migrated it.
			if strings.Contains(err.Error(), "does not exist") {
				return -1
			}
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
}
