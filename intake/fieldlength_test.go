package intake

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// longMessageConfig is a form whose message may be 20,000 characters, with a body
// limit that allows it.
func longMessageConfig(t *testing.T, maxFieldLength int) (*Config, error) {
	t.Helper()
	c := &Config{
		Form:           "contact",
		Fields:         []FieldSpec{{Name: "message", Required: true, MaxLength: 20000}},
		MaxBodyBytes:   1 << 20,
		MaxFieldLength: maxFieldLength,
		Routes:         []Route{{Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}}},
		IPHashKey:      []byte("test-key"),
	}
	return c, c.Provision()
}

// A field's max_length above the default limit of one value is honoured: the limit
// follows the spec unless max_field_length is set lower, which is refused at load.
func TestMaxLengthAboveDefaultFieldLimitIsHonoured(t *testing.T) {
	s := openRealStore(t)
	c, err := longMessageConfig(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 15000)
	w := s.serve(t, c, postJSON(fmt.Sprintf(`{"message":%q}`, long)))
	if a := jsonAnswer(t, w.Body.String()); w.Code != http.StatusOK || a.Status != "accepted" {
		t.Fatalf("15,000-character message: %d %s, want 200 accepted", w.Code, w.Body)
	}
	var got row
	for _, r := range s.rows(t) {
		got = r
	}
	if got.Status != "accepted" || !strings.Contains(got.Data, long) {
		t.Errorf("stored %s with %d bytes of data, want the whole message accepted", got.Status, len(got.Data))
	}

	if _, err := longMessageConfig(t, 10000); err == nil ||
		err.Error() != `intake: form contact: field "message": max_length 20000 is above max_field_length 10000, the limit of any one value; raise max_field_length or lower max_length` {
		t.Errorf("max_length above an explicit max_field_length: %v, want it refused", err)
	}
}

// Within max_body, a value over a length limit (the field's max_length, or
// max_field_length for a field without one) is stored quarantined and answered 422,
// never refused with 400 and dropped.
func TestValueOverLengthLimitIsStoredQuarantined(t *testing.T) {
	s := openRealStore(t)
	c, err := longMessageConfig(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := s.serve(t, c, postJSON(fmt.Sprintf(`{"message":%q}`, strings.Repeat("x", 20001))))
	a := jsonAnswer(t, w.Body.String())
	if w.Code != http.StatusUnprocessableEntity || a.Status != "quarantined" ||
		len(a.Errors) != 1 || a.Errors[0].Message != "message must be at most 20000 characters" {
		t.Fatalf("20,001-character message: %d %s, want 422 naming the limit", w.Code, w.Body)
	}

	// Without a field spec the limit of one value is max_field_length.
	plain := &Config{Form: "plain", MaxFieldLength: 100, IPHashKey: []byte("test-key")}
	if err := plain.Provision(); err != nil {
		t.Fatal(err)
	}
	w = s.serve(t, plain, postJSON(fmt.Sprintf(`{"note":%q}`, strings.Repeat("y", 101))))
	b := jsonAnswer(t, w.Body.String())
	if w.Code != http.StatusUnprocessableEntity || len(b.Errors) != 1 || b.Errors[0].Message != "note must be at most 100 characters" {
		t.Fatalf("101-character note: %d %s, want 422 naming the limit", w.Code, w.Body)
	}
	stored := map[string]string{}
	for _, r := range s.rows(t) {
		stored[r.ID] = r.Status + "/" + r.Reason
	}
	for _, id := range []string{a.ID, b.ID} {
		if stored[id] != "quarantined/schema_violation" {
			t.Errorf("row %s: %q, want quarantined/schema_violation", id, stored[id])
		}
	}
}
