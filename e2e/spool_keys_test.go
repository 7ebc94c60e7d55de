package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// keyedAnswer is the JSON answer to a keyed post.
type keyedAnswer struct {
	Code      int
	ID        string `json:"id"`
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
}

func postSameKeyed(t *testing.T, p *caddyProc, key string) keyedAnswer {
	t.Helper()
	resp, body := do(t, keyedJSONPost(context.Background(), p.URL("/contact"), "one message", key))
	a := keyedAnswer{Code: resp.StatusCode}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, body, err)
	}
	return a
}

// Three identical posts with one idempotency key while PostgreSQL is down, with a crash
// and restart of Caddy before the third (the spool's key index is read back from its
// files): every answer names the first post's id, the second and third as duplicates;
// a fourth with other content is refused 422 as with the database up. Once PostgreSQL
// is back, that id is the one accepted row and the fourth is stored quarantined.
func TestOneKeyDuringAnOutageIsOneSubmission(t *testing.T) {
	t.Parallel()
	pg, _, c := newSpoolCaddy(t)

	pg.Kill()
	var answers []keyedAnswer
	for i := 0; i < 3; i++ {
		if i == 2 {
			c.Kill()
			c.Restart()
		}
		answers = append(answers, postSameKeyed(t, c, "outage-key"))
	}
	first := answers[0]
	if first.Code != http.StatusOK || first.Status != "queued" || first.Duplicate || first.ID == "" {
		t.Fatalf("first post during the outage: %+v, want 200 queued\n%s", first, c.Log())
	}
	for i, a := range answers[1:] {
		if a != (keyedAnswer{Code: http.StatusOK, ID: first.ID, Status: "queued", Duplicate: true}) {
			t.Fatalf("post %d with the same key: %+v, want 200 queued duplicate of %s", i+2, a, first.ID)
		}
	}
	// The key reused for other content is refused as with the database up: 422, kept
	// quarantined under an id of its own.
	resp, body := do(t, keyedJSONPost(context.Background(), c.URL("/contact"), "other content", "outage-key"))
	var reused keyedAnswer
	json.Unmarshal([]byte(body), &reused)
	if resp.StatusCode != http.StatusUnprocessableEntity || reused.Status != "quarantined" || reused.ID == "" || reused.ID == first.ID {
		t.Fatalf("key reused with other content during the outage: %d %s, want 422 quarantined under its own id", resp.StatusCode, body)
	}

	pg.Start()
	want := map[string]string{first.ID: "accepted", reused.ID: "quarantined"}
	if err := waitFor(60*time.Second, func() bool { return len(storedStatuses(pg.DSN())) == len(want) }); err != nil {
		t.Fatalf("answered ids not stored after PostgreSQL came back: %v\n%s", err, c.Log())
	}
	if got := storedStatuses(pg.DSN()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	if a := postSameKeyed(t, c, "outage-key"); a != (keyedAnswer{Code: http.StatusOK, ID: first.ID, Status: "accepted", Duplicate: true}) {
		t.Fatalf("retry after recovery: %+v, want the stored %s accepted duplicate", a, first.ID)
	}
}
