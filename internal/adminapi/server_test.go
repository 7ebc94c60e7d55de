package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// testBackend is a running App reduced to a real SQLite store; it counts wake-ups.
type testBackend struct {
	store outbox.Store
	wakes atomic.Int32
}

func (b *testBackend) Store() outbox.Store           { return b.store }
func (b *testBackend) Logger() *zap.Logger           { return zap.NewNop() }
func (b *testBackend) Wake(context.Context)          { b.wakes.Add(1) }
func (b *testBackend) Health(context.Context) Health { return Health{Status: "ok"} }
func (b *testBackend) Parker() outbox.Parker         { return outbox.StoreParker{Store: b.store} }
func (b *testBackend) Ledger(ctx context.Context, forms []string, days int) (outbox.Ledger, error) {
	return BuildLedger(ctx, b.store, forms, days)
}
func (b *testBackend) ReplaySpool(context.Context) (spool.Report, error) {
	return spool.Report{}, ErrSpoolOff
}

func openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// call runs one request through the server and returns the recorded answer and the
// error Caddy would have written.
func call(t *testing.T, s *Server, method, target, body string) (*httptest.ResponseRecorder, *RouteError) {
	t.Helper()
	w := httptest.NewRecorder()
	err := s.ServeAdmin(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	if err == nil {
		return w, nil
	}
	var re *RouteError
	if !errors.As(err, &re) {
		t.Fatalf("%s %s: error %v is not a RouteError", method, target, err)
	}
	return w, re
}

func TestWrongMethodAnswers405WithAllow(t *testing.T) {
	s := NewServer(func() Backend { return &testBackend{store: openStore(t)} })
	id := uuid.Must(uuid.NewV7()).String()
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/form_outbox/health", "GET, HEAD"},
		{"PUT", "/form_outbox/submissions", "GET, HEAD"},
		{"PUT", "/form_outbox/submissions/" + id, "DELETE, GET, HEAD"},
		{"GET", "/form_outbox/submissions/" + id + "/release", "POST"},
		{"GET", "/form_outbox/deliveries/" + id + "/retry", "POST"},
		{"PATCH", "/form_outbox/suppressions", "DELETE, GET, HEAD, POST"},
		{"GET", "/form_outbox/spool/replay", "POST"},
		// The method is checked before the id: a wrong method on a bad id is still 405.
		{"POST", "/form_outbox/submissions/not-a-uuid", "DELETE, GET, HEAD"},
	} {
		w, re := call(t, s, c.method, c.path, "")
		if re == nil || re.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s = %+v, want 405", c.method, c.path, re)
			continue
		}
		if got := w.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		want := "method " + c.method + " not allowed on " + c.path
		if re.Error() != want {
			t.Errorf("%s %s: message %q, want %q", c.method, c.path, re.Error(), want)
		}
		if w.Body.Len() != 0 {
			t.Errorf("%s %s: the mux's own body leaked: %q", c.method, c.path, w.Body.String())
		}
	}
}

func TestUnknownPathsAndBadIDs(t *testing.T) {
	var up atomic.Bool
	b := &testBackend{store: openStore(t)}
	s := NewServer(func() Backend {
		if up.Load() {
			return b
		}
		return nil
	})
	for _, c := range []struct {
		method, path string
		status       int
		msg          string
	}{
		{"GET", "/form_outbox/nope", 404, "no such form_outbox admin route: /form_outbox/nope"},
		{"GET", "/form_outbox/", 404, "no such form_outbox admin route: /form_outbox/"},
		{"GET", "/form_outbox/submissions//x", 404, "no such form_outbox admin route: /form_outbox/submissions//x"},
		// A malformed id is refused before the App is looked up.
		{"GET", "/form_outbox/deliveries/zzz", 400, `malformed id "zzz": want a UUID`},
		{"GET", "/form_outbox/health", 503, "the form_outbox app is not running"},
	} {
		_, re := call(t, s, c.method, c.path, "")
		if re == nil || re.Status != c.status || re.Error() != c.msg {
			t.Errorf("%s %s = %+v, want %d %q", c.method, c.path, re, c.status, c.msg)
		}
	}
	up.Store(true)
	// A trailing slash has always been accepted.
	if w, re := call(t, s, "GET", "/form_outbox/health/", ""); re != nil || w.Code != 200 || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("GET health/ = %d %+v, want 200 no-store", w.Code, re)
	}
	if _, re := call(t, s, "POST", "/form_outbox/spool/replay", ""); re == nil || re.Status != 409 || re.Error() != "the spool is off" {
		t.Errorf("replay with the spool off = %+v, want 409", re)
	}
}

func TestRoutesServeTheStore(t *testing.T) {
	st := openStore(t)
	b := &testBackend{store: st}
	s := NewServer(func() Backend { return b })
	ctx := context.Background()
	sub := storetest.NewSubmission("contact", storetest.WithStatus(outbox.SubmissionQuarantined, "schema_violation"))
	d := storetest.NewDelivery(sub, "team", "team@example.com")
	if _, err := outbox.AcceptOne(ctx, st, sub, []outbox.Delivery{d}); err != nil {
		t.Fatal(err)
	}

	w, re := call(t, s, "GET", "/form_outbox/submissions/"+sub.ID.String(), "")
	if re != nil || w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("show = %d %+v", w.Code, re)
	}
	var got Submission
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != sub.ID.String() || got.Status != "quarantined" || len(got.Deliveries) != 1 || got.Deliveries[0].Status != "skipped" {
		t.Fatalf("show body %s", w.Body)
	}

	w, re = call(t, s, "GET", "/form_outbox/submissions?status=quarantined&form=contact", "")
	var page Page[Submission]
	if re != nil || json.Unmarshal(w.Body.Bytes(), &page) != nil || len(page.Items) != 1 {
		t.Fatalf("list = %+v %s", re, w.Body)
	}

	// Retrying a skipped delivery is a conflict, and nothing is woken.
	if _, re = call(t, s, "POST", "/form_outbox/deliveries/"+d.ID.String()+"/retry", ""); re == nil || re.Status != 409 {
		t.Fatalf("retry skipped = %+v, want 409", re)
	}
	w, re = call(t, s, "POST", "/form_outbox/submissions/"+sub.ID.String()+"/release", "")
	if re != nil || !strings.Contains(w.Body.String(), `"result": "released"`) || b.wakes.Load() != 1 {
		t.Fatalf("release = %+v %s, wakes %d", re, w.Body, b.wakes.Load())
	}
	back, err := st.GetDelivery(ctx, d.ID)
	if err != nil || back.Status != outbox.DeliveryPending {
		t.Fatalf("delivery after release: %+v, %v", back, err)
	}

	w, re = call(t, s, "DELETE", "/form_outbox/submissions/"+sub.ID.String(), "")
	if re != nil || !strings.Contains(w.Body.String(), `"result": "erased"`) {
		t.Fatalf("delete = %+v %s", re, w.Body)
	}
	if _, err := st.GetSubmission(ctx, sub.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("erased submission still readable: %v", err)
	}
	if _, re = call(t, s, "GET", "/form_outbox/submissions/"+sub.ID.String(), ""); re == nil || re.Status != 404 {
		t.Fatalf("show erased = %+v, want 404", re)
	}
}
