package e2e

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/formoutbox/caddy-form-outbox/internal/browsertest"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// uploadCaddyfile is issue 19's form: a required PDF and up to three photos, e-mailed
// through the file provider. {{STORAGE}} is the storage line(s); TMPDIR points Caddy's
// temporary files at {{DIR}}/tmp so a test can see what they leave.
const uploadCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		{{STORAGE}}
		spool {{DIR}}/spool
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
		worker {
			poll_interval 300ms
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /apply {
		form apply
		field name required
		field cv file required max_size 600KB types application/pdf
		field photos file max_files 3 max_size 100KB types image/png image/jpeg
		max_body 2MB
		notify email hr@example.com {
			attach
		}
	}
}
`

// uploadStore is one store under test: its storage lines and a read-only SQL view.
type uploadStore struct {
	name    string
	storage string
	open    func(t *testing.T, dir string) *sql.DB
	q       func(string) string // rewrites ? placeholders for the driver
}

func uploadStores(t *testing.T) []uploadStore {
	pg := storetest.NewPostgresSchemaName(t)
	return []uploadStore{
		{name: "sqlite", storage: "storage sqlite {{DIR}}/forms.db",
			open: func(t *testing.T, dir string) *sql.DB { return openSQLite(t, filepath.Join(dir, "forms.db")) },
			q:    func(s string) string { return s }},
		{name: "postgres", storage: fmt.Sprintf("storage postgres %q {\n\t\t\tschema %s\n\t\t}", pg.DSN, pg.Schema),
			open: func(t *testing.T, _ string) *sql.DB { return openPGSchema(t, pg.DSN, pg.Schema) },
			q:    dollarPlaceholders},
	}
}

func openPGSchema(t *testing.T, dsn, schema string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

func dollarPlaceholders(s string) string {
	n := 0
	return regexp.MustCompile(`\?`).ReplaceAllStringFunc(s, func(string) string { n++; return fmt.Sprintf("$%d", n) })
}

type upPart struct {
	name, filename, ctype string
	body                  []byte
}

func multipartBody(t testing.TB, parts ...upPart) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := `form-data; name="` + p.name + `"`
		if p.filename != "" {
			cd += `; filename="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p.filename) + `"`
			h.Set("Content-Type", p.ctype)
		}
		h.Set("Content-Disposition", cd)
		w, _ := mw.CreatePart(h)
		w.Write(p.body)
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func postUpload(t *testing.T, p *caddyProc, parts ...upPart) (int, string, string) {
	t.Helper()
	ct, body := multipartBody(t, parts...)
	req, _ := http.NewRequest(http.MethodPost, p.URL("/apply"), bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "application/json")
	resp, text := do(t, req)
	var a struct{ ID, Status string }
	json.Unmarshal([]byte(text), &a)
	return resp.StatusCode, a.ID, text
}

type storedFile struct {
	Field, Name, Sniffed, SHA, Rejected string
	Size                                int64
	Kept                                bool
	Content                             []byte
}

func (s uploadStore) submission(t *testing.T, db *sql.DB, id string) (status, reason string, files []storedFile) {
	t.Helper()
	if err := db.QueryRow(s.q(`SELECT status, reason FROM submissions WHERE id = ?`), id).Scan(&status, &reason); err != nil {
		t.Fatalf("submission %s: %v", id, err)
	}
	rows, err := db.Query(s.q(`SELECT id, field, name, sniffed_type, sha256, rejected, size, has_content FROM files
		WHERE submission_id = ? ORDER BY position`), id)
	if err != nil {
		t.Fatalf("files of %s: %v", id, err)
	}
	var ids []string
	for rows.Next() {
		var f storedFile
		var fid string
		if err := rows.Scan(&fid, &f.Field, &f.Name, &f.Sniffed, &f.SHA, &f.Rejected, &f.Size, &f.Kept); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fid)
		files = append(files, f)
	}
	rows.Close()
	for i, fid := range ids {
		crows, err := db.Query(s.q(`SELECT data FROM file_chunks WHERE file_id = ? ORDER BY seq`), fid)
		if err != nil {
			t.Fatal(err)
		}
		for crows.Next() {
			var chunk []byte
			crows.Scan(&chunk)
			files[i].Content = append(files[i].Content, chunk...)
		}
		crows.Close()
	}
	return status, reason, files
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var (
	e2ePDF = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("a real brief "), 30000)...) // 390 kB
	e2ePNG = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 2000)...)
)

// Uploads through a built Caddy on both stores: a PDF stored with its submission and
// listed in the e-mail; every hostile file answered and stored as specified.
func TestUploadsEndToEnd(t *testing.T) {
	t.Parallel()
	for _, st := range uploadStores(t) {
		t.Run(st.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "tmp"), 0o700)
			cf := strings.ReplaceAll(uploadCaddyfile, "{{STORAGE}}", st.storage)
			c := newCaddy(t, caddyOpts{Caddyfile: cf, Dir: dir, Env: []string{"TMPDIR=" + filepath.Join(dir, "tmp")}})
			db := st.open(t, dir)
			name := upPart{name: "name", body: []byte("Ada")}

			code, id, body := postUpload(t, c, name, upPart{"cv", "brief.pdf", "application/pdf", e2ePDF},
				upPart{"photos", "me.png", "image/png", e2ePNG})
			if code != 200 || !strings.Contains(body, `"status":"accepted"`) {
				t.Fatalf("PDF upload: %d %s\n%s", code, body, c.Log())
			}
			status, _, files := st.submission(t, db, id)
			if status != "accepted" || len(files) != 2 || files[0].SHA != sha(e2ePDF) || !bytes.Equal(files[0].Content, e2ePDF) ||
				files[0].Sniffed != "application/pdf" || files[1].Name != "me.png" || !bytes.Equal(files[1].Content, e2ePNG) {
				t.Fatalf("stored %s with %d files: %+v", status, len(files), files)
			}
			var mail string
			if err := waitFor(30*time.Second, func() bool {
				var did string
				if db.QueryRow(st.q(`SELECT id FROM deliveries WHERE submission_id = ? AND status = 'sent'`), id).Scan(&did) != nil {
					return false
				}
				b, err := os.ReadFile(filepath.Join(dir, "mail", did+".eml"))
				mail = string(b)
				return err == nil
			}); err != nil {
				t.Fatalf("no e-mail sent: %v\n%s", err, c.Log())
			}
			if !strings.Contains(mail, "cv: brief.pdf (390 kB, application/pdf)") || !strings.Contains(mail, "photos: me.png (2.0 kB, image/png)") {
				t.Errorf("e-mail does not list the files:\n%s", mail)
			}
			if att := emailAttachments(t, mail); len(att) != 2 || !bytes.Equal(att["brief.pdf"], e2ePDF) || !bytes.Equal(att["me.png"], e2ePNG) {
				t.Errorf("e-mail attachments: %d, want the PDF and the photo byte for byte", len(att))
			}

			hostile := []struct {
				name   string
				parts  []upPart
				code   int
				status string
				reason string
				rule   string // the last file's rule
				stored string // the last file's stored name, when checked
			}{
				{"HTML renamed .pdf", []upPart{name, {"cv", "cv.pdf", "application/pdf", []byte("<html><script>alert(1)</script></html>")}},
					422, "quarantined", "file_rejected", "type_not_allowed", ""},
				{"path traversal name", []upPart{name, {"cv", "../../../../etc/cron.d/x.pdf", "application/pdf", []byte("%PDF-1.4 x")}},
					200, "accepted", "", "", "x.pdf"},
				{"zip bomb style name", []upPart{name, {"cv", strings.Repeat("../", 200) + strings.Repeat("€", 100) + ".pdf", "application/pdf", []byte("%PDF-1.4 y")}},
					200, "accepted", "", "", strings.Repeat("€", 48) + ".pdf"},
				{"0-byte", []upPart{name, {"cv", "cv.pdf", "application/pdf", nil}}, 422, "quarantined", "file_rejected", "empty", ""},
				{"over max_size", []upPart{name, {"cv", "cv.pdf", "application/pdf", append([]byte("%PDF-1.4"), make([]byte, 700<<10)...)}},
					422, "quarantined", "file_rejected", "too_large", ""},
				{"too many", []upPart{name, {"cv", "cv.pdf", "application/pdf", []byte("%PDF-1.4 x")},
					{"photos", "1.png", "image/png", e2ePNG}, {"photos", "2.png", "image/png", e2ePNG},
					{"photos", "3.png", "image/png", e2ePNG}, {"photos", "4.png", "image/png", e2ePNG}},
					422, "quarantined", "file_rejected", "too_many", ""},
			}
			for _, h := range hostile {
				code, id, body := postUpload(t, c, h.parts...)
				if code != h.code {
					t.Errorf("%s: answered %d %s, want %d", h.name, code, body, h.code)
					continue
				}
				status, reason, files := st.submission(t, db, id)
				last := files[len(files)-1]
				if status != h.status || reason != h.reason || last.Rejected != h.rule || !last.Kept ||
					int64(len(last.Content)) != last.Size || (h.stored != "" && last.Name != h.stored) {
					t.Errorf("%s: stored %s/%s, last file %+v", h.name, status, reason,
						storedFile{Name: last.Name, Rejected: last.Rejected, Size: last.Size, Kept: last.Kept})
				}
				var pending int
				db.QueryRow(st.q(`SELECT count(*) FROM deliveries WHERE submission_id = ? AND status <> 'skipped'`), id).Scan(&pending)
				if h.status == "quarantined" && pending != 0 {
					t.Errorf("%s: %d deliveries not skipped", h.name, pending)
				}
			}
			// Past max_body: 413, nothing stored.
			before := countRows(t, db, "submissions")
			code, _, _ = postUpload(t, c, name, upPart{"cv", "cv.pdf", "application/pdf", append([]byte("%PDF-1.4"), make([]byte, 3<<20)...)})
			if code != http.StatusRequestEntityTooLarge || countRows(t, db, "submissions") != before {
				t.Errorf("over max_body: %d, submissions %d -> %d", code, before, countRows(t, db, "submissions"))
			}
			if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// kill -9 while an upload is still arriving leaves no submission, no file row, no
// chunk and no temporary file; the restarted Caddy takes the retried post.
func TestUploadKilledMidwayLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, st := range uploadStores(t) {
		t.Run(st.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp")
			os.MkdirAll(tmp, 0o700)
			cf := strings.ReplaceAll(uploadCaddyfile, "{{STORAGE}}", st.storage)
			c := newCaddy(t, caddyOpts{Caddyfile: cf, Dir: dir, Env: []string{"TMPDIR=" + tmp}})
			db := st.open(t, dir)
			code, _, body := postUpload(t, c, upPart{name: "name", body: []byte("warm-up")}, upPart{"cv", "a.pdf", "application/pdf", []byte("%PDF-1.4 a")})
			if code != 200 {
				t.Fatalf("warm-up: %d %s", code, body)
			}
			before := countRows(t, db, "files")

			ct, full := multipartBody(t, upPart{name: "name", body: []byte("Ada")}, upPart{"cv", "brief.pdf", "application/pdf", e2ePDF})
			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.HTTPPort))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /apply HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: %d\r\nAccept: application/json\r\n\r\n", ct, len(full))
			// More than the in-memory budget, so the rest is being written to a temporary
			// file when the process dies.
			if _, err := conn.Write(full[:len(full)*3/4]); err != nil {
				t.Fatal(err)
			}
			// The upload is in progress once Caddy holds an (unlinked) temporary file open.
			if err := waitFor(10*time.Second, func() bool { return openTempFiles(c, tmp) > 0 }); err != nil {
				t.Fatalf("upload never reached a temporary file: %v", err)
			}
			c.Kill()
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left after kill -9: %v", left)
			}
			c.Restart()
			if n := countRows(t, db, "files"); n != before {
				t.Errorf("files after kill -9 mid-upload: %d, want %d", n, before)
			}
			var orphans int
			db.QueryRow(`SELECT count(*) FROM file_chunks WHERE file_id NOT IN (SELECT id FROM files)`).Scan(&orphans)
			if orphans != 0 || countRows(t, db, "submissions") != 1 {
				t.Errorf("%d orphan chunks, %d submissions (want 0, 1)", orphans, countRows(t, db, "submissions"))
			}
			code, id, body := postUpload(t, c, upPart{name: "name", body: []byte("Ada")}, upPart{"cv", "brief.pdf", "application/pdf", e2ePDF})
			if _, _, files := st.submission(t, db, id); code != 200 || len(files) != 1 || files[0].SHA != sha(e2ePDF) {
				t.Fatalf("retry after the restart: %d %s, files %d", code, body, len(files))
			}
		})
	}
}

// openTempFiles counts the deleted upload files the Caddy process holds open.
func openTempFiles(c *caddyProc, tmp string) int {
	c.mu.Lock()
	pid := c.cmd.Process.Pid
	c.mu.Unlock()
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, filepath.Join(tmp, "form_outbox-upload-")) && strings.HasSuffix(target, "(deleted)") {
			n++
		}
	}
	return n
}

// With PostgreSQL down an upload is answered "queued" with its file in the spool; once
// the database is back it is stored once, content byte for byte, and the spool's copy
// is gone.
func TestUploadSpooledWhilePostgresIsDown(t *testing.T) {
	t.Parallel()
	pg := newPGCluster(t)
	dir := t.TempDir()
	cf := strings.ReplaceAll(uploadCaddyfile, "{{STORAGE}}", fmt.Sprintf("storage postgres %q", pg.DSN()))
	c := newCaddy(t, caddyOpts{Caddyfile: cf, Dir: dir})
	if code, _, body := postUpload(t, c, upPart{name: "name", body: []byte("up")}, upPart{"cv", "a.pdf", "application/pdf", []byte("%PDF-1.4 a")}); code != 200 {
		t.Fatalf("with the database up: %d %s", code, body)
	}
	pg.Kill()
	code, id, body := postUpload(t, c, upPart{name: "name", body: []byte("Ada")}, upPart{"cv", "brief.pdf", "application/pdf", e2ePDF})
	if code != 200 || !strings.Contains(body, `"status":"queued"`) {
		t.Fatalf("with the database down: %d %s\n%s", code, body, c.Log())
	}
	spooled, _ := os.ReadDir(filepath.Join(dir, "spool", "files"))
	if len(spooled) != 1 {
		t.Fatalf("spooled files: %v, want the PDF's content", spooled)
	}
	pg.Start()
	st := uploadStore{q: dollarPlaceholders}
	var db *sql.DB
	if err := waitFor(60*time.Second, func() bool {
		ids := storedIDs(pg.DSN())
		return ids[id]
	}); err != nil {
		t.Fatalf("spooled upload not stored: %v\n%s", err, c.Log())
	}
	cfg, _ := pgx.ParseConfig(pg.DSN())
	db = stdlib.OpenDB(*cfg)
	defer db.Close()
	status, _, files := st.submission(t, db, id)
	if status != "accepted" || len(files) != 1 || !bytes.Equal(files[0].Content, e2ePDF) || files[0].Name != "brief.pdf" {
		t.Fatalf("replayed: %s, %d files", status, len(files))
	}
	if n := countRows(t, db, "files"); n != 2 {
		t.Errorf("%d files stored, want 2 (each once)", n)
	}
	if err := waitFor(30*time.Second, func() bool {
		left, _ := os.ReadDir(filepath.Join(dir, "spool", "files"))
		return len(left) == 0
	}); err != nil {
		t.Errorf("the spool kept the file after the replay")
	}
}

// filesURLCaddyfile serves its own signed file links under /files and sends every
// submission to a webhook.
const filesURLCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		files_url http://127.0.0.1:{{HTTP}}/files 1h
		worker {
			poll_interval 300ms
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox_files /files/*
	form_outbox /apply {
		form apply
		field name required
		field cv file required types application/pdf
		max_body 2MB
		notify webhook {{HOOK}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
	}
}
`

// A webhook carries each file's metadata and a signed link; the link downloads the file
// as an attachment, and a tampered one is refused.
func TestWebhookFileLinkDownloads(t *testing.T) {
	t.Parallel()
	bodies := make(chan []byte, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
	}))
	defer hook.Close()
	c := newCaddy(t, caddyOpts{Caddyfile: strings.ReplaceAll(filesURLCaddyfile, "{{HOOK}}", hook.URL)})
	if code, _, body := postUpload(t, c, upPart{name: "name", body: []byte("Ada")}, upPart{"cv", "brief.pdf", "application/pdf", e2ePDF}); code != 200 {
		t.Fatalf("upload: %d %s", code, body)
	}
	var got struct {
		Files []struct{ Name, SHA256, URL string }
	}
	select {
	case b := <-bodies:
		if err := json.Unmarshal(b, &got); err != nil || len(got.Files) != 1 {
			t.Fatalf("webhook body %s: %v", b, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no webhook\n%s", c.Log())
	}
	f := got.Files[0]
	if f.Name != "brief.pdf" || f.SHA256 != sha(e2ePDF) || !strings.HasPrefix(f.URL, c.URL("/files/")) {
		t.Fatalf("webhook file %+v", f)
	}
	req, _ := http.NewRequest(http.MethodGet, f.URL, nil)
	resp, body := do(t, req)
	if resp.StatusCode != 200 || body != string(e2ePDF) || resp.Header.Get("Content-Disposition") != `attachment; filename=brief.pdf` ||
		resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("download: %d %v, %d bytes", resp.StatusCode, resp.Header, len(body))
	}
	// A later expiry, and other spellings of the same expiry with the original signature
	// ("+EXP" arrives as %2B, a leading zero, a space as %20): one canonical link only.
	for _, exp := range []string{"exp=9", "exp=%2B", "exp=0", "exp=%20"} {
		tampered := strings.Replace(f.URL, "exp=", exp, 1)
		req, _ = http.NewRequest(http.MethodGet, tampered, nil)
		if resp, body := do(t, req); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "PDF") {
			t.Fatalf("tampered link %s: %d, %d bytes", tampered, resp.StatusCode, len(body))
		}
	}
}

// emailAttachments reads the attached files of an .eml by name.
func emailAttachments(t *testing.T, raw string) map[string][]byte {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("parse e-mail: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("e-mail is %q, want multipart/mixed", msg.Header.Get("Content-Type"))
	}
	out := map[string][]byte{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("e-mail part: %v", err)
		}
		if disp, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition")); disp == "attachment" {
			b, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, part))
			if err != nil {
				t.Fatalf("attachment %s: %v", dp["filename"], err)
			}
			out[dp["filename"]] = b
		}
	}
}

// uploadSiteCaddyfile serves a page whose form uses the browser client and takes a file.
const uploadSiteCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		worker off
	}
}
http://127.0.0.1:{{HTTP}} {
	root * {{DIR}}/site
	form_outbox /apply {
		form apply
		field name required
		field cv file required types application/pdf
		max_body 2MB
		redirect /thanks.html
		store_only
	}
	file_server
}
`

const uploadPage = `<!DOCTYPE html><html><body>
<form data-form-outbox action="/apply" method="post" enctype="multipart/form-data">
<input id="name" name="name"><input id="cv" type="file" name="cv"><button type="submit">Send</button>
</form>
<script src="/apply?form_outbox=client.js" defer></script>
</body></html>`

// In Chromium, a form of the browser client with a chosen file is posted by the browser
// itself, so the file arrives; the client never drops it for a JSON post.
func TestBrowserClientLeavesFileFormsToTheBrowser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "site"), 0o700)
	os.WriteFile(filepath.Join(dir, "site", "index.html"), []byte(uploadPage), 0o600)
	os.WriteFile(filepath.Join(dir, "site", "thanks.html"), []byte("<p>Thanks</p>"), 0o600)
	pdfPath := filepath.Join(dir, "brief.pdf")
	os.WriteFile(pdfPath, e2ePDF, 0o600)
	p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: uploadSiteCaddyfile})
	ctx := browsertest.New(t, browsertest.Options{})
	if err := chromedp.Do(ctx,
		chromedp.Navigate(p.URL("/")),
		chromedp.SendKeys(chromedp.CSS("#name"), "Ada"),
		chromedp.SetUploadFiles(chromedp.CSS("#cv"), []string{pdfPath}),
	); err != nil {
		t.Fatalf("fill: %v", err)
	}
	// The client is running before the click (it intercepts every other form).
	if err := waitFor(10*time.Second, func() bool {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete"`))
		return err == nil && ok
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementById("cv").files.length`)); err != nil || n != 1 {
		t.Fatalf("the file input holds %d files (%v)", n, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("button[type=submit]"))); err != nil {
		t.Fatalf("fill and send: %v", err)
	}
	db := openSQLite(t, filepath.Join(dir, "forms.db"))
	st := uploadStore{q: func(s string) string { return s }}
	var id string
	if err := waitFor(30*time.Second, func() bool {
		return db.QueryRow(`SELECT id FROM submissions WHERE status = 'accepted'`).Scan(&id) == nil
	}); err != nil {
		var n int
		db.QueryRow(`SELECT count(*) FROM submissions`).Scan(&n)
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + " | " + document.body.innerText`))
		t.Fatalf("no accepted submission (%d stored); the page shows %q", n, state)
	}
	if _, _, files := st.submission(t, db, id); len(files) != 1 || !bytes.Equal(files[0].Content, e2ePDF) || files[0].Name != "brief.pdf" {
		t.Fatalf("stored files %d", len(files))
	}
}
