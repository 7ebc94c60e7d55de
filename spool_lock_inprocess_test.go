package formoutbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// lockSQLite takes the database's write lock from a connection of its own, as a backup
// tool or an operator's sqlite3 shell holding BEGIN EXCLUSIVE would, until the returned
// function releases it.
func lockSQLite(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatalf("lock %s: %v", path, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
				t.Errorf("unlock %s: %v", path, err)
			}
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// timedPost posts the contact form as a JSON client and says how long the answer took.
// Its client waits far longer than the accept deadline, so a slow answer is measured,
// not cut short. Each post has its own message: the handler answers an identical repeat
// with the first one's id.
func timedPost(addr string) (time.Duration, int, jsonAnswer, error) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	body := fmt.Sprintf(`{"name":"Ada","email":"ada@example.com","message":"while the database is locked, %d"}`, postSeq.Add(1))
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/contact", strings.NewReader(body))
	if err != nil {
		return 0, 0, jsonAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return time.Since(start), 0, jsonAnswer{}, err
	}
	defer resp.Body.Close()
	var a jsonAnswer
	err = json.NewDecoder(resp.Body).Decode(&a)
	return time.Since(start), resp.StatusCode, a, err
}

// With the SQLite file locked by another connection for longer than SQLite's busy
// timeout, every post (the first ones of a burst included, which lead the shared commit
// and wait for the lock themselves) is answered "queued" from the spool within the accept
// deadline plus a margin for the spool's fsync; nothing is lost once the lock goes.
func TestInProcessLockedSQLiteAnswersQueuedWithinAcceptDeadline(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	runCaddy(t, map[string]any{
		"form_outbox": spoolApp(dir, map[string]any{"dir": filepath.Join(dir, "spool")}),
		"http":        httpApp(addr, contactHandler()),
	})
	app := runningApp(t)
	release := lockSQLite(t, filepath.Join(dir, "forms.db"))

	const margin = 1500 * time.Millisecond
	type answer struct {
		took   time.Duration
		status int
		a      jsonAnswer
		err    error
	}
	var answers []answer
	// A burst first (one leads the shared commit, one waits to lead the next, the rest
	// join), then posts one after another while those commits still wait for the lock.
	burst := make([]answer, 4)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			var b answer
			b.took, b.status, b.a, b.err = timedPost(addr)
			burst[i] = b
		})
	}
	wg.Wait()
	answers = append(answers, burst...)
	for range 2 {
		var b answer
		b.took, b.status, b.a, b.err = timedPost(addr)
		answers = append(answers, b)
	}
	ids := map[uuid.UUID]bool{}
	for i, b := range answers {
		if b.err != nil || b.status != http.StatusOK || !b.a.OK || b.a.Status != "queued" {
			t.Errorf("post %d: %d %+v (err %v) after %v, want 200 queued", i, b.status, b.a, b.err, b.took)
			continue
		}
		if b.took > outbox.DefaultAcceptTimeout+margin {
			t.Errorf("post %d answered after %v, want at most %v (accept deadline) + %v", i, b.took, outbox.DefaultAcceptTimeout, margin)
		}
		ids[uuid.MustParse(b.a.ID)] = true
	}
	if t.Failed() {
		return
	}
	if n, _, _ := app.SpoolStats(); n != len(answers) {
		t.Fatalf("spool entries = %d, want %d (every queued post)", n, len(answers))
	}

	release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := app.ReplaySpool(ctx); err != nil {
		t.Fatalf("replay after the lock went: %v", err)
	}
	for id := range ids {
		if _, err := app.store.GetSubmission(ctx, id); err != nil {
			t.Errorf("queued submission %s not in the database after replay: %v", id, err)
		}
	}
	if len(ids) != len(answers) {
		t.Errorf("%d distinct ids for %d posts", len(ids), len(answers))
	}
}
