package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLedgerCountsTheSpoolAndErrsLowAfterKill9: with PostgreSQL down, posts answered
// "queued" are counted as answered and spooled, and as replayed once the database is
// back. A kill -9 while the database is down loses that instance's unflushed counts: the
// ledger then shows fewer answers than rows, never more, and no mismatch.
func TestLedgerCountsTheSpoolAndErrsLowAfterKill9(t *testing.T) {
	t.Parallel()
	pg := newPGCluster(t)
	hook := newReceiver(t)
	cf := strings.NewReplacer("{{DSN}}", pg.DSN(), "{{HOOK}}", hook.srv.URL).Replace(spoolCaddyfile)
	c := newCaddy(t, caddyOpts{Caddyfile: cf})

	post := func(key, want string) {
		t.Helper()
		code, _, status := postKeyed(t, c, key)
		if code != http.StatusOK || status != want {
			t.Fatalf("post %s: %d %q, want 200 %s\n%s", key, code, status, want, c.Log())
		}
	}
	post("up-0", "accepted")
	post("up-1", "accepted")
	var l ledgerBody
	c.adminJSON(t, http.MethodGet, "/form_outbox/ledger?days=2", 200, &l) // flushes: 2 answered

	pg.Kill()
	for i := 0; i < 3; i++ {
		post(fmt.Sprint("lost-count-", i), "queued")
	}
	c.Kill() // these three answers were never flushed: the database was down
	c.Restart()
	for i := 0; i < 2; i++ {
		post(fmt.Sprint("counted-", i), "queued")
	}
	pg.Start()

	var total ledgerLine
	if err := waitFor(60*time.Second, func() bool {
		code, body := c.admin(t, http.MethodGet, "/form_outbox/ledger?days=2")
		if code != http.StatusOK {
			return false
		}
		l = ledgerBody{}
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		total = ledgerLine{}
		for _, d := range l.Days {
			total.Answered += d.Answered
			total.Spooled += d.Spooled
			total.Replayed += d.Replayed
			total.Accepted += d.Accepted
		}
		return total.Accepted == 7 && total.Replayed == 5
	}); err != nil {
		t.Fatalf("the ledger never showed 7 stored and 5 replayed: %+v\n%s", l, c.Log())
	}
	if total.Answered != 4 || total.Spooled != 2 {
		t.Errorf("answered %d, spooled %d; want 4 and 2 (the 3 answers of the killed process lost, low)", total.Answered, total.Spooled)
	}
	if room := total.Accepted + total.Spooled - total.Replayed - total.Answered; room < 0 || l.Mismatches != 0 {
		t.Errorf("answered %d > stored %d + spooled %d - replayed %d, or mismatches %d: a lost count looked like a lost lead",
			total.Answered, total.Accepted, total.Spooled, total.Replayed, l.Mismatches)
	}
}
