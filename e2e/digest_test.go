package e2e

import (
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// digestPeriod is the e2e digest schedule: short, so a test sees a period close, and
// long enough that a few posts made right after a boundary share one period.
const digestPeriod = 10 * time.Second

const digestCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		{{STORAGE}}
		inbox_url https://example.com/inbox
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field message required
		notify email owner@example.com ops@example.com {
			digest every 10s
		}
		notify email sales@example.com
	}
}
`

// digestMail is one .eml file as its reader sees it.
type digestMail struct {
	To, Subject, Text string
}

// readMails decodes every .eml file in dir: headers, and the text/plain part with its
// transfer encoding undone.
func readMails(t *testing.T, dir string) []digestMail {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []digestMail
	dec := new(mime.WordDecoder)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
		if err != nil {
			continue // being written
		}
		subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
		if err != nil {
			t.Fatalf("%s: subject: %v", f, err)
		}
		to, err := mail.ParseAddress(msg.Header.Get("To"))
		if err != nil {
			t.Fatalf("%s: To: %v", f, err)
		}
		m := digestMail{To: to.Address, Subject: subject}
		_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
		if err != nil || params["boundary"] == "" {
			t.Fatalf("%s: want a multipart message: %v", f, err)
		}
		mr := multipart.NewReader(msg.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			if strings.HasPrefix(part.Header.Get("Content-Type"), "text/plain") {
				b, err := io.ReadAll(part)
				if err != nil {
					t.Fatalf("%s: text part: %v", f, err)
				}
				m.Text = string(b)
			}
		}
		out = append(out, m)
	}
	return out
}

// postDigestBatch waits for a fresh period, then posts n JSON submissions spread over
// targets and returns their ids.
func postDigestBatch(t *testing.T, targets []*caddyProc, n int) []string {
	t.Helper()
	// Start right after a boundary, so the posts (well under a second) share a period;
	// the assertions below still hold if load made them straddle one.
	if err := waitFor(2*digestPeriod, func() bool { return time.Since(time.Now().Truncate(digestPeriod)) < time.Second }); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		resp, ans := postJSON(t, targets[i%len(targets)], fmt.Sprintf(`{"message":"digest post %d"}`, i), nil)
		id, _ := ans["id"].(string)
		if resp.StatusCode != 200 || ans["status"] != "accepted" || id == "" {
			t.Fatalf("post %d: %d %v", i, resp.StatusCode, ans)
		}
		ids = append(ids, id)
	}
	return ids
}

// checkDigests waits until the digest mails in dirs list every id, then checks that each
// (recipient, period) got exactly one digest, that each id is listed once per recipient,
// and that the per-submission route kept its own mail per submission.
func checkDigests(t *testing.T, dirs []string, ids []string, periods int) {
	t.Helper()
	all := func() (digests, others []digestMail) {
		for _, d := range dirs {
			for _, m := range readMails(t, d) {
				if strings.HasPrefix(m.Subject, "Digest of form contact: ") {
					digests = append(digests, m)
				} else {
					others = append(others, m)
				}
			}
		}
		return digests, others
	}
	listedOnce := func(digests []digestMail) bool {
		for _, to := range []string{"owner@example.com", "ops@example.com"} {
			for _, id := range ids {
				n := 0
				for _, m := range digests {
					if m.To == to {
						n += strings.Count(m.Text, "https://example.com/inbox/submissions/"+id)
					}
				}
				if n != 1 {
					return false
				}
			}
		}
		return true
	}
	// The period closes at most digestPeriod after the posts, plus the closer's 10 s
	// grace, plus the send.
	if err := waitFor(90*time.Second, func() bool { d, _ := all(); return listedOnce(d) }); err != nil {
		d, o := all()
		t.Fatalf("digests never listed every post once per recipient: %v\ndigests: %+v\nothers: %d", err, d, len(o))
	}
	digests, others := all()
	if len(digests) != 2*periods {
		t.Errorf("%d digest mails for %d period(s) and 2 recipients, want %d: %+v", len(digests), periods, 2*periods, digests)
	}
	seen := map[string]bool{}
	for _, m := range digests {
		key := m.To + " " + m.Subject
		if seen[key] {
			t.Errorf("two digests to %s for one period: %q", m.To, m.Subject)
		}
		seen[key] = true
		if periods == 1 && !strings.Contains(m.Subject, fmt.Sprintf(": %d submissions, ", len(ids))) {
			t.Errorf("digest subject %q, want %d submissions", m.Subject, len(ids))
		}
		if !strings.Contains(m.Text, "message: digest post") {
			t.Errorf("digest does not show the summary lines:\n%s", m.Text)
		}
	}
	// No per-submission mail for the digest route's recipients; the other route's stays.
	sales := 0
	for _, m := range others {
		if m.To != "sales@example.com" {
			t.Errorf("per-submission mail to %s, a digest recipient", m.To)
		}
		sales++
	}
	if sales != len(ids) {
		t.Errorf("%d mails to sales@example.com, want one per submission (%d)", sales, len(ids))
	}
}

// periodsOf counts the distinct digest periods the stored submissions fall in.
func periodsOf(created []time.Time) int {
	set := map[time.Time]bool{}
	for _, c := range created {
		set[c.Truncate(digestPeriod)] = true
	}
	return len(set)
}

// TestDigestSQLite: a digest route on SQLite through a built Caddy: posts, then one
// digest e-mail per recipient for the period, listing each post once.
func TestDigestSQLite(t *testing.T) {
	t.Parallel()
	cf := strings.Replace(digestCaddyfile, "{{STORAGE}}", "storage sqlite {{DIR}}/forms.db", 1)
	p := newCaddy(t, caddyOpts{Caddyfile: cf})
	ids := postDigestBatch(t, []*caddyProc{p}, 3)

	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))
	var created []time.Time
	for _, id := range ids {
		var us int64
		if err := db.QueryRow(`SELECT created_at FROM submissions WHERE id = ?`, id).Scan(&us); err != nil {
			t.Fatal(err)
		}
		created = append(created, time.UnixMicro(us))
	}
	periods := periodsOf(created)
	checkDigests(t, []string{filepath.Join(p.dir, "mail")}, ids, periods)
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM digests WHERE form = 'contact' AND route = 'email'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != periods {
		t.Errorf("%d digest rows, want %d", rows, periods)
	}
}

// TestDigestPostgresTwoInstances: two Caddy instances on one PostgreSQL outbox, both
// closing periods: the posts of both are listed in one digest per period, sent once.
func TestDigestPostgresTwoInstances(t *testing.T) {
	t.Parallel()
	pc := storetest.NewPostgresSchemaName(t)
	storage := fmt.Sprintf("storage postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
	cf := strings.Replace(digestCaddyfile, "{{STORAGE}}", storage, 1)
	a := newCaddy(t, caddyOpts{Caddyfile: cf})
	b := newCaddy(t, caddyOpts{Caddyfile: cf})
	ids := postDigestBatch(t, []*caddyProc{a, b}, 4)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connCfg, err := pgx.ParseConfig(pc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	connCfg.RuntimeParams["search_path"] = pc.Schema
	conn, err := pgx.ConnectConfig(ctx, connCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var created []time.Time
	for _, id := range ids {
		var c time.Time
		if err := conn.QueryRow(ctx, `SELECT created_at FROM submissions WHERE id = $1`, id).Scan(&c); err != nil {
			t.Fatal(err)
		}
		created = append(created, c)
	}
	periods := periodsOf(created)
	checkDigests(t, []string{filepath.Join(a.dir, "mail"), filepath.Join(b.dir, "mail")}, ids, periods)
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM digests WHERE form = 'contact' AND route = 'email'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != periods {
		t.Errorf("%d digest rows, want %d", rows, periods)
	}
}
