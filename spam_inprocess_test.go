package formoutbox

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// A post that reaches the spool during an outage is judged on the time trap when it
// arrives, with the signals it earned then (too fast here; reuse unchecked, since the
// store could not record the token) kept in the spool record; the replay stores exactly
// those, and never judges the token again, so an outage never makes it expired.
func TestInProcessSpooledPostKeepsTheSignalsJudgedOnArrival(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	h := contactHandler()
	h["spam"] = map[string]any{"time_trap_min": "1h", "time_trap_max": "2h"}
	runCaddy(t, map[string]any{
		"form_outbox": spoolApp(dir, map[string]any{"dir": dir + "/spool"}),
		"http":        httpApp(addr, h),
	})
	resp, err := noRedirects.Get("http://" + addr + "/contact?form_outbox=token")
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token, Field string }
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || tok.Token == "" {
		t.Fatalf("token: %d %+v (%v)", resp.StatusCode, tok, err)
	}

	app := runningApp(t)
	if err := app.store.Close(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/contact",
		strings.NewReader(`{"name":"Ada","email":"ada@example.com","message":"during the outage","`+tok.Field+`":"`+tok.Token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err = noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var a jsonAnswer
	err = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if err != nil || a.Status != "queued" {
		t.Fatalf("post with the store down: %d %+v (%v), want queued", resp.StatusCode, a, err)
	}

	other := storetest.OpenSQLite(t)
	if rep, err := app.openSpool().Spool.Replay(context.Background(), other, nil); err != nil || rep.Stored != 1 {
		t.Fatalf("replay: %+v, %v", rep, err)
	}
	evs, err := outbox.Inbox(other).SubmissionEvents(context.Background(), uuid.MustParse(a.ID))
	if err != nil || len(evs) == 0 {
		t.Fatalf("events of the replayed submission: %v (%v)", evs, err)
	}
	score, signals, err := outbox.ReceivedSignals(evs[0].Data)
	var names []string
	for _, s := range signals {
		names = append(names, s.Name)
	}
	if err != nil || score != 4 || !reflect.DeepEqual(names, []string{"time_trap_too_fast", "time_trap_unchecked"}) {
		t.Errorf("replayed signals %d %v (%v), want too_fast (4) and unchecked (0), as judged on arrival", score, names, err)
	}
	sub, err := other.GetSubmission(context.Background(), uuid.MustParse(a.ID))
	if err != nil || sub.Status != outbox.SubmissionAccepted {
		t.Errorf("replayed submission %+v (%v), want accepted", sub, err)
	}
}
