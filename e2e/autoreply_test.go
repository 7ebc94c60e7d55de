package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const autoreplyCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage {{STORAGE}}
		worker {
			poll_interval 500ms
		}
		email {
			from "Forms <forms@example.com>"
			file {{MAIL}}
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field name required
		field email required email
		field message required
		notify email sales@example.com
		autoreply {
			from "Example Ltd <hello@example.com>"
			subject "We got your message, {field.name}"
			body_text {{TEMPLATE}}
			window 24h
		}
	}
}
`

const autoreplyTemplate = "Dear {{field \"name\"}},\n\nthank you for writing. We answer within a day.\n"

// autoreplyCaddy starts a Caddy with the form above on storage, writing e-mail to mail.
func autoreplyCaddy(t *testing.T, storage, mail string) *caddyProc {
	t.Helper()
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "autoreply.txt")
	if err := os.WriteFile(tmpl, []byte(autoreplyTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	cf := strings.NewReplacer("{{STORAGE}}", storage, "{{MAIL}}", mail, "{{TEMPLATE}}", tmpl).Replace(autoreplyCaddyfile)
	return newCaddy(t, caddyOpts{Caddyfile: cf, Dir: dir})
}

// mailsTo reads the .eml files in dir and returns those addressed to addr.
func mailsTo(t *testing.T, dir, addr string) []*mail.Message {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	var out []*mail.Message
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // being renamed into place
		}
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.Contains(strings.ToLower(m.Header.Get("To")), strings.ToLower(addr)) {
			out = append(out, m)
		}
	}
	return out
}

// waitMails waits until dir holds n e-mails to addr.
func waitMails(t *testing.T, p *caddyProc, dir, addr string, n int) []*mail.Message {
	t.Helper()
	var got []*mail.Message
	if err := waitFor(30*time.Second, func() bool { got = mailsTo(t, dir, addr); return len(got) >= n }); err != nil {
		t.Fatalf("%d e-mails to %s, want %d: %v\n%s", len(got), addr, n, err, p.Log())
	}
	return got
}

// autoreplyStatus returns the status of the submission's autoreply delivery, "" when it
// has none.
func autoreplyStatus(t *testing.T, p *caddyProc, id string) string {
	t.Helper()
	var sub submissionJSON
	p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+id, 200, &sub)
	status := ""
	for _, d := range sub.Deliveries {
		if d.Route == "autoreply" {
			if status != "" {
				t.Fatalf("submission %s has two autoreplies: %+v", id, sub.Deliveries)
			}
			status = d.Status
		}
	}
	return status
}

func contactPost(name, email, message string, extra ...string) url.Values {
	v := url.Values{"name": {name}, "email": {email}}
	if message != "" {
		v.Set("message", message)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

// TestAutoreplyThroughCaddy: through a built Caddy, on SQLite and on PostgreSQL, two
// posts from one address within the window get one reply, a honeypot post none, and a
// quarantined post gets its reply when released (and none when the window is taken).
func TestAutoreplyThroughCaddy(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			mailDir := t.TempDir()
			storage := "sqlite " + filepath.Join(t.TempDir(), "forms.db")
			if store == "postgres" {
				pc := storetest.NewPostgresSchemaName(t)
				storage = fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
			}
			p := autoreplyCaddy(t, storage, mailDir)

			first := postAdminForm(t, p, "/contact", contactPost("Ada", "Ada@Example.com", "Hello"))
			second := postAdminForm(t, p, "/contact", contactPost("Ada", "ada@example.com", "Hello again"))
			spam := postAdminForm(t, p, "/contact", contactPost("Mallory", "mallory@example.com", "Buy", "_gotcha", "x"))
			held := postAdminForm(t, p, "/contact", contactPost("Carol", "carol@example.com", "")) // 422: no message
			heldAda := postAdminForm(t, p, "/contact", contactPost("Ada", "ada@example.com", ""))

			for id, want := range map[string]string{second: "", spam: "skipped", held: "skipped", heldAda: "skipped"} {
				if got := autoreplyStatus(t, p, id); got != want {
					t.Errorf("submission %s: autoreply %q, want %q", id, got, want)
				}
			}
			// The notifications of both accepted posts, and exactly one reply.
			waitMails(t, p, mailDir, "sales@example.com", 2)
			replies := waitMails(t, p, mailDir, "ada@example.com", 1)
			// The outcome is recorded just after the mail file is written.
			var got string
			if err := waitFor(20*time.Second, func() bool { got = autoreplyStatus(t, p, first); return got == "sent" }); err != nil {
				t.Fatalf("first post's autoreply %q, want sent: %v", got, err)
			}
			m := replies[0]
			if len(replies) != 1 || m.Header.Get("From") != `"Example Ltd" <hello@example.com>` ||
				m.Header.Get("Subject") != "We got your message, Ada" || m.Header.Get("Reply-To") != "" {
				t.Fatalf("%d replies to ada; first: %v", len(replies), m.Header)
			}

			// Released, the quarantined post gets its reply; Ada's held post does not:
			// her window started with the first post.
			p.adminJSON(t, http.MethodPost, "/form_outbox/submissions/"+held+"/release", 200, nil)
			p.adminJSON(t, http.MethodPost, "/form_outbox/submissions/"+heldAda+"/release", 200, nil)
			waitMails(t, p, mailDir, "carol@example.com", 1)
			waitMails(t, p, mailDir, "sales@example.com", 4)
			if got := autoreplyStatus(t, p, heldAda); got != "skipped" {
				t.Fatalf("released post within the window: autoreply %q, want skipped", got)
			}
			if n := len(mailsTo(t, mailDir, "ada@example.com")); n != 1 {
				t.Fatalf("%d replies to ada, want 1", n)
			}
			if n := len(mailsTo(t, mailDir, "mallory@example.com")); n != 0 {
				t.Fatalf("%d replies to the honeypot post's address", n)
			}
			// Counted like any delivery, under its own channel (once its outcome is
			// recorded, just after the mail file is written).
			var metrics string
			if err := waitFor(20*time.Second, func() bool {
				_, metrics = p.admin(t, http.MethodGet, "/metrics")
				return strings.Contains(metrics, `form_outbox_deliveries_total{channel="autoreply",outcome="sent",provider="file"} 2`)
			}); err != nil {
				t.Fatalf("metrics do not count the two sent autoreplies:\n%s", grepLines(metrics, "form_outbox_deliveries_total"))
			}
		})
	}
}

// TestAutoreplyTwoInstancesOnePostgres: two Caddy processes on one PostgreSQL schema,
// each taking posts from the same address at the same time, send one reply per address.
func TestAutoreplyTwoInstancesOnePostgres(t *testing.T) {
	t.Parallel()
	pc := storetest.NewPostgresSchemaName(t)
	storage := fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
	mailA, mailB := t.TempDir(), t.TempDir()
	a := autoreplyCaddy(t, storage, mailA)
	b := autoreplyCaddy(t, storage, mailB)

	const visitors, postsEach = 5, 4
	var wg sync.WaitGroup
	errs := make(chan error, visitors*postsEach*2)
	for v := range visitors {
		for i := range postsEach * 2 {
			p := a
			if i%2 == 1 {
				p = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				vals := contactPost("Visitor", fmt.Sprintf("visitor%d@example.com", v), fmt.Sprintf("post %d", i))
				req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(vals.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Accept", "application/json")
				resp, err := noRedirect.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("post: status %d", resp.StatusCode)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := visitors * postsEach * 2
	err := waitFor(60*time.Second, func() bool {
		return len(mailsTo(t, mailA, "sales@example.com"))+len(mailsTo(t, mailB, "sales@example.com")) >= total
	})
	if err != nil {
		t.Fatalf("notifications not all sent: %v\n%s\n%s", err, a.Log(), b.Log())
	}
	for v := range visitors {
		addr := fmt.Sprintf("visitor%d@example.com", v)
		err := waitFor(30*time.Second, func() bool { return len(mailsTo(t, mailA, addr))+len(mailsTo(t, mailB, addr)) >= 1 })
		if err != nil {
			t.Fatalf("no reply to %s: %v", addr, err)
		}
		if n := len(mailsTo(t, mailA, addr)) + len(mailsTo(t, mailB, addr)); n != 1 {
			t.Fatalf("%d replies to %s from two instances, want 1", n, addr)
		}
	}
}

// grepLines returns the lines of s that contain substr.
func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
