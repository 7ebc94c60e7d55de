package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const formspreeCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
		worker {
			poll_interval 1s
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	root * {{DIR}}/site
	form_outbox /contact {
		form contact
		field email required email
		field message required
		allowed_origins http://127.0.0.1:{{HTTP}}
		notify email sales@example.com
	}
	file_server
}
`

// formspreePage is a contact form as Formspree's documentation has users write it, with
// only the action changed: hidden _subject and _next, the _gotcha honeypot, and the
// visitor's address in "email".
const formspreePage = `<!DOCTYPE html>
<html><body>
<form action="/contact" method="POST">
  <label>Your name: <input type="text" name="name"></label>
  <label>Your email: <input type="email" name="email"></label>
  <label>Your message: <textarea name="message"></textarea></label>
  <input type="hidden" name="_subject" value="New submission from the website">
  <input type="hidden" name="_next" value="http://127.0.0.1:{{HTTP}}/thanks.html">
  <input type="text" name="_gotcha" style="display:none">
  <button type="submit">Send</button>
</form>
</body></html>
`

var inputRE = regexp.MustCompile(`<(?:input|textarea)[^>]*name="([^"]+)"(?:[^>]*value="([^"]*)")?`)

// browserPost fills the page's form the way a browser submits it: every named control in
// document order, hidden values as given, the visitor's values for the visible ones.
func browserPost(t *testing.T, p *caddyProc, page string, visitor map[string]string) *http.Response {
	t.Helper()
	var body []string
	for _, m := range inputRE.FindAllStringSubmatch(page, -1) {
		v := m[2]
		if typed, ok := visitor[m[1]]; ok {
			v = typed
		}
		body = append(body, url.QueryEscape(m[1])+"="+url.QueryEscape(v))
	}
	req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(strings.Join(body, "&")))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	req.Header.Set("Origin", strings.TrimSuffix(p.URL(""), "/"))
	req.Header.Set("Referer", p.URL("/contact.html"))
	resp, _ := do(t, req)
	return resp
}

func TestFormspreeHTMLFormUnchanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := freePort(t)
	page := strings.ReplaceAll(formspreePage, "{{HTTP}}", fmt.Sprint(port))
	if err := os.MkdirAll(filepath.Join(dir, "site"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "site", "contact.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newCaddy(t, caddyOpts{Caddyfile: formspreeCaddyfile, Dir: dir, HTTPPort: port})

	// The page is served as written, and posting it lands on _next.
	resp, served := do(t, mustReq(http.MethodGet, p.URL("/contact.html")))
	if resp.StatusCode != 200 || served != page {
		t.Fatalf("GET contact.html: %d", resp.StatusCode)
	}
	resp = browserPost(t, p, served, map[string]string{"name": "Ada", "email": "ada@example.com", "message": "fs-lead"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != p.URL("/thanks.html") {
		t.Fatalf("post: %d Location %q, want 303 to _next", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A bot that fills every field, the hidden honeypot included.
	resp = browserPost(t, p, served, map[string]string{"name": "Bot", "email": "bot@example.com", "message": "fs-bot", "_gotcha": "http://spam.example"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bot post: %d, want the same 303 as a visitor", resp.StatusCode)
	}

	db := openSQLite(t, filepath.Join(dir, "forms.db"))
	lead := submissionsWhere(t, db, "fs-lead")
	if len(lead) != 1 || lead[0].Status != "accepted" ||
		lead[0].Data != `{"name":"Ada","email":"ada@example.com","message":"fs-lead"}` {
		t.Fatalf("lead stored as %+v; want accepted with only the visitor's fields", lead)
	}
	bot := submissionsWhere(t, db, "fs-bot")
	if len(bot) != 1 || bot[0].Status != "spam" || bot[0].Reason != "honeypot" {
		t.Fatalf("bot stored as %+v, want spam/honeypot", bot)
	}

	// The notification: _subject as the subject, the visitor in Reply-To, no special
	// field among the data.
	var deliveryID string
	if err := db.QueryRow(`SELECT id FROM deliveries WHERE submission_id = ?`, lead[0].ID).Scan(&deliveryID); err != nil {
		t.Fatalf("the lead's delivery: %v", err)
	}
	var mail string
	if err := waitFor(30*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "mail", deliveryID+".eml"))
		mail = string(b)
		return err == nil
	}); err != nil {
		t.Fatalf("no email for the lead: %v\n%s", err, p.Log())
	}
	for _, want := range []string{`(?m)^Subject: New submission from the website\r$`, `(?m)^Reply-To: <?ada@example\.com>?\r$`, `fs-lead`} {
		if !regexp.MustCompile(want).MatchString(mail) {
			t.Errorf("email lacks %s:\n%s", want, mail)
		}
	}
	for _, never := range []string{"_next", "_gotcha", "_subject"} {
		if strings.Contains(mail, never) {
			t.Errorf("email shows the special field %s:\n%s", never, mail)
		}
	}
}
