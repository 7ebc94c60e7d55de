package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
)

// Through the built Caddy and a real SMTP session: a visitor's address on an IP literal,
// a single label or a reserved name is stored as submitted and notified to the owner,
// but the relay is never asked to deliver to it (no RCPT TO), while a public address
// still gets its reply.
func TestAutoreplyNeverToAnInternalHost(t *testing.T) {
	t.Parallel()
	srv := smtpfake.New(smtpfake.Config{NoSTARTTLS: true, NoAUTH: true})
	defer srv.Close()
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "autoreply.txt")
	if err := os.WriteFile(tmpl, []byte(autoreplyTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	// autoreplyCaddyfile's form, its e-mail sent through the relay.
	cf := strings.NewReplacer("{{STORAGE}}", "sqlite "+filepath.Join(dir, "forms.db"), "{{TEMPLATE}}", tmpl,
		"file {{MAIL}}", "smtp {\n\t\t\t\taddress "+srv.Addr()+"\n\t\t\t\ttls none\n\t\t\t}").Replace(autoreplyCaddyfile)
	p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: cf})

	internal := []string{"ip@[10.0.0.1]", "ip@[127.0.0.1]", "x@localhost", "x@internal", "a@b", "x@printer.local"}
	var ids []string
	for _, addr := range internal {
		ids = append(ids, postAdminForm(t, p, "/contact", contactPost("Eve", addr, "Hello")))
	}
	postAdminForm(t, p, "/contact", contactPost("Ada", "ada@example.com", "Hello"))
	// Every notification and the one reply; the relay saw everything it will see.
	if !srv.WaitReceived(len(internal)+2, 30*time.Second) {
		t.Fatalf("the relay received %d messages, want %d\n%s", len(srv.Received()), len(internal)+2, p.Log())
	}
	rcpts := srv.Rcpts()
	for _, addr := range internal {
		if slices.Contains(rcpts, addr) {
			t.Errorf("RCPT TO:<%s> reached the relay", addr)
		}
	}
	if n := strings.Count(strings.Join(rcpts, "\n"), "sales@example.com"); n != len(internal)+1 || !slices.Contains(rcpts, "ada@example.com") {
		t.Fatalf("RCPT TO addresses %q: want the %d notifications and ada's reply", rcpts, len(internal)+1)
	}
	for i, id := range ids {
		var sub submissionJSON
		p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+id, 200, &sub)
		routes := []string{}
		for _, d := range sub.Deliveries {
			routes = append(routes, d.Route)
		}
		if sub.Status != "accepted" || sub.Data["email"] != internal[i] || len(routes) != 1 || routes[0] == "autoreply" {
			t.Errorf("%s: stored %s with %q, deliveries %v; want accepted, as sent, the notification only",
				internal[i], sub.Status, sub.Data["email"], routes)
		}
	}
}
