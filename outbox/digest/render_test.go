package digest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestRenderCapsTheList: a digest of more than maxListed submissions counts them all,
// shows the first maxListed and sends the reader to the inbox for the rest.
func TestRenderCapsTheList(t *testing.T) {
	s, _ := Parse("daily at 08:00")
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var items []outbox.DigestItem
	for i := range maxListed + 7 {
		items = append(items, outbox.DigestItem{ID: uuid.Must(uuid.NewV7()), CreatedAt: start.Add(time.Duration(i) * time.Second),
			Data: outbox.Fields{{Name: "message", Value: strings.Repeat("long ", 100)}}})
	}
	p, err := render(Route{Form: "contact", Schedule: s, InboxURL: "https://example.com/inbox/"}, start, s.Next(start), items, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Subject, "Digest of form contact: 507 submissions, ") {
		t.Errorf("subject %q", p.Subject)
	}
	if n := strings.Count(p.Text, "https://example.com/inbox/submissions/"); n != maxListed {
		t.Errorf("%d links in the text, want %d", n, maxListed)
	}
	if !strings.Contains(p.Text, "\n... and 7 more in the inbox: https://example.com/inbox\n") ||
		!strings.Contains(p.HTML, `... and 7 more in the <a href="https://example.com/inbox">inbox</a>`) {
		t.Errorf("no pointer to the rest:\n%s", p.Text[len(p.Text)-200:])
	}
	for _, l := range strings.Split(p.Text, "\n") {
		if strings.HasPrefix(l, "1. ") && !strings.HasSuffix(l, "…") {
			t.Errorf("long summary not cut: %q", l)
		}
	}
}

// A name ending in U+202E does not reverse the rest of a digest line (the next field,
// the "open" link): the summary keeps no bidi control, and in HTML it is isolated.
func TestRenderKeepsNoBidiControl(t *testing.T) {
	s, _ := Parse("daily at 08:00")
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	items := []outbox.DigestItem{{ID: uuid.Must(uuid.NewV7()), CreatedAt: start,
		Data: outbox.Fields{{Name: "name", Value: "Mallory\u202e"}, {Name: "topic\u2067", Value: "sales"}}}}
	p, err := render(Route{Form: "contact", Schedule: s, InboxURL: "https://example.com/inbox"}, start, s.Next(start), items, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Text, "  name: Mallory · topic: sales\n") || !strings.Contains(p.HTML, " <bdi>name: Mallory · topic: sales</bdi> <a href=") ||
		strings.ContainsAny(p.Text+p.HTML, "\u202e\u2067") {
		t.Fatalf("digest:\n%s\n%s", p.Text, p.HTML)
	}
}
