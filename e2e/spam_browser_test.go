package e2e

import (
	"database/sql"
	"encoding/json"
	"testing"
)

// storedSignals reads the spam signals kept with a submission (its submission.received
// event's data, outbox/internal/acceptprep), as "name" -> weight.
func storedSignals(t *testing.T, db *sql.DB, id string) map[string]int {
	t.Helper()
	var data string
	if err := db.QueryRow(`SELECT data FROM events WHERE kind = 'submission.received' AND submission_id = ?`, id).Scan(&data); err != nil {
		t.Fatalf("received event of %s: %v", id, err)
	}
	var d struct {
		Signals []struct {
			Name   string
			Weight int
		}
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("received event data %s: %v", data, err)
	}
	out := map[string]int{}
	for _, s := range d.Signals {
		out[s.Name] = s.Weight
	}
	return out
}

// usedTokens counts the single-use records (table used_tokens) whose id starts with
// prefix: "tt:" for time-trap tokens, "pow:" for proof-of-work challenges.
func usedTokens(t *testing.T, db *sql.DB, prefix string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM used_tokens WHERE id LIKE ?`, prefix+"%").Scan(&n); err != nil {
		t.Fatalf("count used tokens: %v", err)
	}
	return n
}

// The built-in client fetches a time-trap token with the page and posts it: with a
// minimum the test's typing always exceeds (1ms), the stored post carries no time-trap
// signal at all (the token was there, well signed and fresh) and its use is recorded;
// with a minimum it never reaches (1h), the post is too fast, a signal that alone
// keeps it accepted.
func TestBrowserClientSendsTheTimeTrapToken(t *testing.T) {
	for _, c := range []struct {
		name, spam string
		want       map[string]int
	}{
		{"in time", "spam {\n\t\t\ttime_trap 1ms 1h\n\t\t}", map[string]int{}},
		{"too fast", "spam {\n\t\t\ttime_trap 1h 2h\n\t\t}", map[string]int{"time_trap_too_fast": 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, db, ctx, marker := browserTest(t, c.spam, true)
			fill(t, ctx, p, marker)
			waitPage(t, ctx, "the time-trap token", `document.querySelector("form[data-form-outbox]").getAttribute("data-form-outbox-token") === "ready"`)
			clickSend(t, ctx)
			waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
			oneAccepted(t, db, marker)
			sub := submissionsWhere(t, db, marker)[0]
			got := storedSignals(t, db, sub.ID)
			if len(got) != len(c.want) || got["time_trap_too_fast"] != c.want["time_trap_too_fast"] {
				t.Errorf("signals %v, want %v", got, c.want)
			}
			if n := usedTokens(t, db, "tt:"); n != 1 {
				t.Errorf("%d used time-trap tokens recorded, want 1", n)
			}
		})
	}
}

// Without JavaScript the plain form posts without a token: a weak signal, accepted.
func TestPlainFormPostWithoutTokenIsAccepted(t *testing.T) {
	p, db, ctx, marker := browserTest(t, "", false)
	fill(t, ctx, p, marker)
	clickSend(t, ctx)
	waitPage(t, ctx, "the thank-you page", `location.pathname === "/thanks.html"`)
	oneAccepted(t, db, marker)
	if got := storedSignals(t, db, submissionsWhere(t, db, marker)[0].ID); len(got) != 1 || got["time_trap_missing"] != 1 {
		t.Errorf("signals %v, want time_trap_missing 1 only", got)
	}
}
