package intake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// jsonAnswer decodes a JSON answer.
func jsonAnswer(t *testing.T, body string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	return a
}

// onlyNewRow returns the one row a request added, failing t otherwise.
func onlyNewRow(t *testing.T, before, after map[string]row) row {
	t.Helper()
	added := newRows(t, before, after)
	if len(added) != 1 {
		t.Fatalf("%d new rows, want 1: %+v", len(added), added)
	}
	return added[0]
}

func keyedJSON(key, body string) *http.Request {
	r := postJSON(body)
	r.Header.Set("Idempotency-Key", key)
	return r
}

// A 422 does not bind its key: the visitor's corrected post with the same key is
// stored, answered accepted (not duplicate) and its deliveries are due; the refused row
// stays. A retry of the corrected post then writes nothing.
func TestCorrectedPostAfter422WithSameKeyIsStored(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	w := s.serve(t, c, keyedJSON("K", `{"name":"Ada","email":"not-an-address","message":"Hi"}`))
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid email: %d %s", w.Code, w.Body)
	}
	refused := s.rows(t)

	w = s.serve(t, c, keyedJSON("K", `{"name":"Ada","email":"ada@example.com","message":"Hi"}`))
	a := jsonAnswer(t, w.Body.String())
	if w.Code != http.StatusOK || !a.OK || a.Status != "accepted" || a.Duplicate {
		t.Fatalf("corrected post: %d %s, want 200 accepted, not duplicate", w.Code, w.Body)
	}
	got := onlyNewRow(t, refused, s.rows(t))
	if got.ID != a.ID || got.Status != "accepted" || !strings.Contains(got.Data, "ada@example.com") {
		t.Fatalf("stored %+v, want the corrected post accepted under the answered id %s", got, a.ID)
	}
	for _, d := range got.Deliveries {
		if !strings.Contains(d, " pending ") {
			t.Errorf("delivery %q, want pending", d)
		}
	}

	stored := s.rows(t)
	w = s.serve(t, c, keyedJSON("K", `{"name":"Ada","email":"ada@example.com","message":"Hi"}`))
	if b := jsonAnswer(t, w.Body.String()); w.Code != http.StatusOK || b.ID != a.ID || !b.Duplicate || b.Status != "accepted" {
		t.Errorf("retry of the corrected post: %d %s, want the first answer with duplicate", w.Code, w.Body)
	}
	if added := newRows(t, stored, s.rows(t)); len(added) != 0 {
		t.Errorf("the retry wrote %+v", added)
	}
}

// The browser keeps a hidden _idempotency_key when the visitor goes back from the 422
// page: the corrected form post is stored and answered like any success.
func TestCorrectedHTMLFormAfter422WithHiddenKeyIsStored(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	w := s.serve(t, c, postForm(form("_idempotency_key", "page-1", "name", "Ada", "email", "nope", "message", "Hi")))
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid email: %d", w.Code)
	}
	before := s.rows(t)
	w = s.serve(t, c, postForm(form("_idempotency_key", "page-1", "name", "Ada", "email", "ada@example.com", "message", "Hi")))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/thanks.html" {
		t.Fatalf("corrected form: %d %q", w.Code, w.Header().Get("Location"))
	}
	if got := onlyNewRow(t, before, s.rows(t)); got.Status != "accepted" || !strings.Contains(got.Data, "ada@example.com") {
		t.Errorf("stored %+v, want the corrected post accepted", got)
	}
}

// A 429 does not bind its key: the same post retried after Retry-After is stored.
func TestRateLimitedPostRetriedWithSameKeyIsStored(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	c.RateLimit = &RateLimit{Requests: 1, Window: Duration(time.Minute)}
	c.DedupeOff = true
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	body := `{"name":"Ada","email":"ada@example.com","message":"Hi"}`
	if w := s.serveAt(t, c, keyedJSON("first", body), testNow); w.Code != http.StatusOK {
		t.Fatalf("first post: %d %s", w.Code, w.Body)
	}
	w := s.serveAt(t, c, keyedJSON("K", body), testNow)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("second post: %d %s, want 429 with Retry-After", w.Code, w.Body)
	}
	limited := s.rows(t)

	later := testNow.Add(time.Minute + time.Second)
	w = s.serveAt(t, c, keyedJSON("K", body), later)
	a := jsonAnswer(t, w.Body.String())
	if w.Code != http.StatusOK || a.Status != "accepted" || a.Duplicate {
		t.Fatalf("retry after Retry-After: %d %s, want 200 accepted, not duplicate", w.Code, w.Body)
	}
	if got := onlyNewRow(t, limited, s.rows(t)); got.ID != a.ID || got.Status != "accepted" {
		t.Errorf("stored %+v, want the retry accepted as %s", got, a.ID)
	}
}

// The same key with other content after an accepted post: stored quarantined, answered
// 422 with the new row's real status, and never sent; the first post keeps the key.
func TestReusedKeyWithOtherContentIs422AndStoredQuarantined(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	w := s.serve(t, c, keyedJSON("K", `{"name":"Ada","email":"ada@example.com","message":"Hi"}`))
	first := jsonAnswer(t, w.Body.String())
	before := s.rows(t)

	w = s.serve(t, c, keyedJSON("K", `{"name":"Ada","email":"ada@example.com","message":"Another question"}`))
	a := jsonAnswer(t, w.Body.String())
	if w.Code != http.StatusUnprocessableEntity || a.OK || a.Status != "quarantined" || a.Error != KeyReusedMessage || a.ID == first.ID {
		t.Fatalf("reused key: %d %s, want 422 quarantined with the key-reused error and a new id", w.Code, w.Body)
	}
	got := onlyNewRow(t, before, s.rows(t))
	if got.ID != a.ID || got.Status != "quarantined" || got.Reason != outbox.ReasonIdempotencyKeyReused || !strings.Contains(got.Data, "Another question") {
		t.Errorf("stored %+v, want the new content quarantined/%s under %s", got, outbox.ReasonIdempotencyKeyReused, a.ID)
	}
	for _, d := range got.Deliveries {
		if !strings.Contains(d, " skipped ") {
			t.Errorf("delivery %q, want skipped", d)
		}
	}

	// The HTML form gets a page saying so, with the same status.
	w = s.serve(t, c, postForm(form("_idempotency_key", "K", "name", "Ada", "email", "ada@example.com", "message", "Third")))
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "already sent") {
		t.Errorf("reused key from a form: %d %s", w.Code, w.Body)
	}
}

// An Idempotency-Key header that is not UTF-8 is refused with 400 before anything is
// stored, like invalid UTF-8 in a field: PostgreSQL would refuse the insert and every
// such post would go to the spool.
func TestInvalidUTF8IdempotencyKeyHeaderIs400(t *testing.T) {
	s := openRealStore(t)
	c := contactConfig(t)
	w := s.serve(t, c, keyedJSON("key-\xff\xfe", `{"name":"Ada","email":"ada@example.com","message":"Hi"}`))
	if w.Code != http.StatusBadRequest || jsonAnswer(t, w.Body.String()).Error != "idempotency key must be valid UTF-8" {
		t.Errorf("invalid UTF-8 key: %d %s, want 400 naming the key", w.Code, w.Body)
	}
	if rows := s.rows(t); len(rows) != 0 {
		t.Errorf("stored %+v, want nothing", rows)
	}
}
