package filelink

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestLinkChecksOnlyWithItsKeyFileAndTime(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	id := uuid.MustParse("0190b5a1-1111-7000-8000-000000000001")
	exp := time.Unix(1_900_000_000, 0)
	link := URL(key, "https://forms.example.com/files/", id, exp)
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, "https://forms.example.com/files/"+id.String()+"?exp=1900000000&sig=") {
		t.Fatalf("link %q: %v", link, err)
	}
	q := u.Query()
	if err := Check(key, id, q.Get("exp"), q.Get("sig"), exp.Add(-time.Second)); err != nil {
		t.Errorf("valid link: %v", err)
	}
	if err := Check(key, id, q.Get("exp"), q.Get("sig"), exp); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v, want ErrExpired", err)
	}
	other := uuid.MustParse("0190b5a1-1111-7000-8000-000000000002")
	for name, err := range map[string]error{
		"another file":      Check(key, other, q.Get("exp"), q.Get("sig"), exp.Add(-time.Hour)),
		"another key":       Check([]byte("another key of thirty-two bytes!"), id, q.Get("exp"), q.Get("sig"), exp.Add(-time.Hour)),
		"a later expiry":    Check(key, id, "1900000001", q.Get("sig"), exp.Add(-time.Hour)),
		"no signature":      Check(key, id, q.Get("exp"), "", exp.Add(-time.Hour)),
		"garbage signature": Check(key, id, q.Get("exp"), "%%%", exp.Add(-time.Hour)),
		"garbage expiry":    Check(key, id, "soon", q.Get("sig"), exp.Add(-time.Hour)),
	} {
		if !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
}

// Only the decimal form URL writes is accepted for the expiry, and only the encoding URL
// writes for the signature: another spelling of the same values is refused even with the
// original signature, so a link has exactly one form.
func TestLinkAcceptsOnlyItsCanonicalForm(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	id := uuid.MustParse("0190b5a1-1111-7000-8000-000000000001")
	exp := time.Unix(1_900_000_000, 0)
	u, err := url.Parse(URL(key, "https://forms.example.com/files/", id, exp))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	sig := q.Get("sig")
	for _, e := range []string{"+1900000000", "01900000000", "00001900000000", " 1900000000", "1900000000 ", "1900000000\n", "1_900_000_000"} {
		if err := Check(key, id, e, sig, exp.Add(-time.Hour)); !errors.Is(err, ErrBadSignature) {
			t.Errorf("expiry %q: %v, want ErrBadSignature", e, err)
		}
	}
	for _, s := range []string{sig + "=", sig + "\n", "\r\n" + sig, sig[:len(sig)-1] + string(sig[len(sig)-1]^1)} {
		if err := Check(key, id, q.Get("exp"), s, exp.Add(-time.Hour)); !errors.Is(err, ErrBadSignature) {
			t.Errorf("signature %q: %v, want ErrBadSignature", s, err)
		}
	}
	if err := Check(key, id, q.Get("exp"), sig, exp.Add(-time.Hour)); err != nil {
		t.Errorf("the link as written: %v", err)
	}
}
