package intake

import (
	"context"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestSpooledPostKeepsItsIntakeEvents: the events intake adds while planning
// (submission.unrouted, template.failed) travel with a post the spool took while the
// store was down, and the replay stores them as a direct write would have.
func TestSpooledPostKeepsItsIntakeEvents(t *testing.T) {
	down := storetest.OpenSQLite(t)
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	sp, err := spool.Open(t.TempDir(), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	acc := &outbox.Acceptor{Store: down}
	acc.SetSpool(&spool.Fallback{Spool: sp, Replayer: &spool.Replayer{Spool: sp}})

	unrouted := routedConfig(t, false)
	failing := &Config{Form: "quote", IPHashKey: []byte("k"), Routes: []Route{
		{Name: "chat", Channel: outbox.ChannelSlack, URL: slackURL, Text: "testdata/templates/failsonx.txt"}}}
	if err := failing.Provision(); err != nil {
		t.Fatal(err)
	}
	for _, post := range []struct {
		c    *Config
		body string
	}{{unrouted, form("topic", "other", "message", "hello")}, {failing, form("topic", "x", "message", "hello")}} {
		w := httptest.NewRecorder()
		post.c.serveSubmission(w, postForm(post.body), acc, zaptest.NewLogger(t), testNow)
		if w.Code != 200 {
			t.Fatalf("%s: answer %d %s with the store down", post.c.Form, w.Code, w.Body)
		}
	}
	if n := sp.Stats().Entries; n != 2 {
		t.Fatalf("%d spooled, want 2", n)
	}

	store := storetest.OpenSQLite(t)
	if rep, err := sp.Replay(context.Background(), store, nil); err != nil || rep.Stored != 2 {
		t.Fatalf("replay %+v, %v", rep, err)
	}
	for kind, want := range map[string]string{
		outbox.EventUnrouted:       `{"form":"contact","reason":"no route matched"}`,
		outbox.EventTemplateFailed: `{"route":"chat","option":"text","template":"testdata/templates/failsonx.txt","error":"template: testdata/templates/failsonx.txt:2:31: executing \"testdata/templates/failsonx.txt\" at \u003cindex .Fields 5\u003e: error calling index: index out of range: 5"}`,
	} {
		evs, err := store.ListEvents(context.Background(), kind, 10)
		if err != nil || len(evs) != 1 || string(evs[0].Data) != want || evs[0].SubmissionID == [16]byte{} {
			t.Errorf("%s events after replay %+v, %v; want one with %s", kind, evs, err, want)
		}
	}
	evs, err := store.ListEvents(context.Background(), outbox.EventUnrouted, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("unrouted events %+v, %v", evs, err)
	}
	sub, err := store.GetSubmission(context.Background(), evs[0].SubmissionID)
	if err != nil || sub.Status != outbox.SubmissionAccepted || sub.Reason != outbox.ReasonNoRouteMatched {
		t.Fatalf("replayed contact submission %+v, %v", sub, err)
	}
}
