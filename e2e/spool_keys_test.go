package e2e

import (
	"context"
	"encoding/json"
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
// files): every answer names the first post's id, the second and third as duplicates,
// and once PostgreSQL is back that id is the one row stored.
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

	pg.Start()
	if err := waitFor(60*time.Second, func() bool { return storedIDs(pg.DSN())[first.ID] }); err != nil {
		t.Fatalf("answered id %s not stored after PostgreSQL came back: %v\n%s", first.ID, err, c.Log())
	}
	if ids := storedIDs(pg.DSN()); len(ids) != 1 {
		t.Fatalf("%d submissions stored, want 1: %v", len(ids), ids)
	}
	if a := postSameKeyed(t, c, "outage-key"); a != (keyedAnswer{Code: http.StatusOK, ID: first.ID, Status: "accepted", Duplicate: true}) {
		t.Fatalf("retry after recovery: %+v, want the stored %s accepted duplicate", a, first.ID)
	}
}
