package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const ledgerCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: the ledger is checked with webhooks that die (410); e2e/park_test.go checks parking.
		park off
		{{STORAGE}}
		worker {
			poll_interval 200ms
		}
		retry {
			base 200ms
			max_delay 1s
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field name required
		field message
		honeypot _gotcha
		notify email sales@example.com
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
	form_outbox /leads {
		form leads
		notify email leads@example.com
	}
	respond "static site"
}
`

// ledgerLine is a line of GET /form_outbox/ledger as the test reads it.
type ledgerLine struct {
	Day, Form                                         string
	Answered, Spooled, Replayed                       int64
	Accepted, Spam, Quarantined, Erased               int64
	Sent, Pending, Parked, Dead, Skipped, Undelivered int64
	Routes                                            []struct {
		Route                                string
		Sent, Pending, Parked, Dead, Skipped int64
	}
	Mismatches []string
}

type ledgerBody struct {
	Days       []ledgerLine
	Mismatches int
}

// TestLedgerEqualsTheRows drives the built Caddy on SQLite and PostgreSQL: accepted
// posts, honeypot spam, quarantined posts (answered 422), webhook deliveries that die
// (410) and an erasure. The ledger of the admin API and of `caddy form-outbox ledger`
// must then say exactly what SELECT counts of the database say, and what the visitors
// were answered; after a delivery row is deleted by hand the ledger flags its submission
// and the CLI fails.
func TestLedgerEqualsTheRows(t *testing.T) {
	t.Parallel()
	for _, st := range uploadStores(t) {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			hook := newSwitchable(t, http.StatusGone)
			dir := t.TempDir()
			cf := strings.NewReplacer("{{STORAGE}}", st.storage, "{{HOOK}}", hook.srv.URL).Replace(ledgerCaddyfile)
			p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: cf})

			answered := map[string]int64{}
			post := func(path string, vals url.Values, want int) string {
				req, _ := http.NewRequest(http.MethodPost, p.URL(path), strings.NewReader(vals.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Accept", "application/json")
				resp, body := do(t, req)
				if resp.StatusCode != want {
					t.Fatalf("POST %s = %d %s, want %d", path, resp.StatusCode, body, want)
				}
				if want == http.StatusOK {
					answered[strings.TrimPrefix(path, "/")]++
				}
				i := strings.Index(body, `"id":"`)
				if i < 0 {
					t.Fatalf("POST %s answered no id: %s", path, body)
				}
				return body[i+6 : i+6+36]
			}
			var contact, leads []string
			for i := 0; i < 6; i++ {
				contact = append(contact, post("/contact", url.Values{"name": {fmt.Sprint("Ada ", i)}, "message": {"hello"}}, http.StatusOK))
			}
			for i := 0; i < 2; i++ { // honeypot: answered like a success, stored as spam
				post("/contact", url.Values{"name": {"Bot"}, "_gotcha": {"x"}, "message": {fmt.Sprint("buy ", i)}}, http.StatusOK)
			}
			for i := 0; i < 2; i++ { // a schema violation: stored quarantined, answered 422
				post("/contact", url.Values{"message": {fmt.Sprint("no name ", i)}}, http.StatusUnprocessableEntity)
			}
			for i := 0; i < 3; i++ {
				leads = append(leads, post("/leads", url.Values{"name": {fmt.Sprint("Lead ", i)}}, http.StatusOK))
			}
			p.adminJSON(t, http.MethodDelete, "/form_outbox/submissions/"+contact[0], 200, nil)

			db := st.open(t, dir)
			q := func(s string) string { return st.q(s) }
			// Every delivery settles: emails sent, webhooks dead (410), spam's skipped.
			if err := waitFor(30*time.Second, func() bool {
				var n int
				err := db.QueryRow(q(`SELECT count(*) FROM deliveries WHERE status IN ('pending', 'failed', 'sending')`)).Scan(&n)
				return err == nil && n == 0
			}); err != nil {
				t.Fatalf("deliveries never settled: %v", err)
			}

			var l ledgerBody
			p.adminJSON(t, http.MethodGet, "/form_outbox/ledger?days=2", 200, &l)
			checkLedgerAgainstRows(t, db, q, l, answered)
			if l.Mismatches != 0 {
				t.Fatalf("ledger shows %d mismatches before anything was lost: %+v", l.Mismatches, l.Days)
			}
			out := p.cli(t, true, "ledger", "--days", "2")
			today := time.Now().UTC().Format(time.DateOnly)
			if !strings.Contains(out, today+" (UTC, open)") || !strings.Contains(out, "mismatches: 0") ||
				!regexp.MustCompile(fmt.Sprintf(`(?m)^contact\s+\*\s+%d\s`, answered["contact"])).MatchString(out) {
				t.Errorf("caddy form-outbox ledger printed:\n%s", out)
			}

			// A delivery row deleted by hand: its accepted submission has none, and the
			// ledger, its CLI (exit 1) and its metric say so.
			w := writableDB(t, st.name, dir, db)
			if _, err := w.Exec(q(`DELETE FROM deliveries WHERE submission_id = ?`), leads[1]); err != nil {
				t.Fatal(err)
			}
			p.adminJSON(t, http.MethodGet, "/form_outbox/ledger?days=2&form=leads", 200, &l)
			var flagged []ledgerLine
			for _, d := range l.Days {
				if len(d.Mismatches) > 0 {
					flagged = append(flagged, d)
				}
			}
			if l.Mismatches != 1 || len(flagged) != 1 || flagged[0].Form != "leads" || flagged[0].Undelivered != 1 ||
				strings.Join(flagged[0].Mismatches, ",") != "accepted_without_delivery" {
				t.Fatalf("after a deleted delivery the ledger shows %+v, want leads flagged with 1 undelivered", l)
			}
			out = p.cli(t, false, "ledger", "--days", "2", "--form", "leads")
			if !strings.Contains(out, "MISMATCH: 1 accepted submission without a delivery") {
				t.Errorf("caddy form-outbox ledger after the loss printed:\n%s", out)
			}
			if got := p.metric(t, "form_outbox_ledger_mismatches"); got != 1 {
				t.Errorf("form_outbox_ledger_mismatches = %v, want 1", got)
			}
			if got := p.metric(t, "form_outbox_answered_total", "form", "contact"); got != float64(answered["contact"]) {
				t.Errorf("form_outbox_answered_total{form=contact} = %v, want %d", got, answered["contact"])
			}
		})
	}
}

// checkLedgerAgainstRows compares the ledger's lines, summed per form over its days,
// with SELECT counts of the tables and with the answers the test received.
func checkLedgerAgainstRows(t *testing.T, db *sql.DB, q func(string) string, l ledgerBody, answered map[string]int64) {
	t.Helper()
	type key struct{ form, route, status string }
	fromLedger := map[key]int64{}
	for _, d := range l.Days {
		fromLedger[key{d.Form, "", "answered"}] += d.Answered
		fromLedger[key{d.Form, "", "accepted"}] += d.Accepted
		fromLedger[key{d.Form, "", "spam"}] += d.Spam
		fromLedger[key{d.Form, "", "quarantined"}] += d.Quarantined
		fromLedger[key{d.Form, "", "erased"}] += d.Erased
		for _, r := range d.Routes {
			fromLedger[key{d.Form, r.Route, "sent"}] += r.Sent
			fromLedger[key{d.Form, r.Route, "pending"}] += r.Pending
			fromLedger[key{d.Form, r.Route, "dead"}] += r.Dead
			fromLedger[key{d.Form, r.Route, "skipped"}] += r.Skipped
		}
	}
	fromRows := map[key]int64{}
	for form, n := range answered {
		fromRows[key{form, "", "answered"}] = n
	}
	rows, err := db.Query(q(`SELECT form, status, count(*) FROM submissions WHERE NOT test GROUP BY form, status`))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k key
		var n int64
		if err := rows.Scan(&k.form, &k.status, &n); err != nil {
			t.Fatal(err)
		}
		fromRows[k] = n
	}
	rows.Close()
	rows, err = db.Query(q(`SELECT s.form, d.route, CASE WHEN d.status IN ('failed', 'sending') THEN 'pending' ELSE d.status END, count(*)
		FROM deliveries d JOIN submissions s ON s.id = d.submission_id WHERE NOT s.test GROUP BY 1, 2, 3`))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k key
		var n int64
		if err := rows.Scan(&k.form, &k.route, &k.status, &n); err != nil {
			t.Fatal(err)
		}
		fromRows[k] += n
	}
	rows.Close()
	var erased int64
	if err := db.QueryRow(q(`SELECT count(*) FROM events WHERE kind = 'submission.erased'`)).Scan(&erased); err != nil {
		t.Fatal(err)
	}
	fromRows[key{"contact", "", "erased"}] = erased
	for k, v := range fromLedger {
		if v == 0 {
			delete(fromLedger, k)
		}
	}
	if fmt.Sprint(fromLedger) != fmt.Sprint(fromRows) {
		t.Errorf("ledger:\n%v\nrows and answers:\n%v", fromLedger, fromRows)
	}
	// The shape of the day: what the test did, by hand.
	want := map[key]int64{{"contact", "", "answered"}: 8, {"contact", "", "accepted"}: 5, {"contact", "", "spam"}: 2,
		{"contact", "", "quarantined"}: 2, {"contact", "", "erased"}: 1, {"leads", "", "answered"}: 3, {"leads", "", "accepted"}: 3}
	for k, n := range want {
		if fromLedger[k] != n {
			t.Errorf("ledger %v = %d, want %d", k, fromLedger[k], n)
		}
	}
}

// writableDB opens the store's database for writing: the SQLite file beside the
// read-only view, or the PostgreSQL view itself.
func writableDB(t *testing.T, store, dir string, db *sql.DB) *sql.DB {
	t.Helper()
	if store != "sqlite" {
		return db
	}
	w, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "forms.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}
