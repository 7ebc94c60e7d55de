package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const pgStartupCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage postgres "%s"
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify webhook http://127.0.0.1:9/hook
	}
}
`

const pgStartupWarning = "PostgreSQL is not reachable at start-up"

// startupWarnings waits for Caddy's start-up connection check and returns its warnings.
func startupWarnings(t *testing.T, p *caddyProc) []string {
	t.Helper()
	var warns []string
	if err := waitFor(20*time.Second, func() bool {
		warns = nil
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, pgStartupWarning) {
				warns = append(warns, line)
			}
		}
		return len(warns) > 0
	}); err != nil {
		t.Fatalf("no start-up warning %q in the log:\n%s", pgStartupWarning, p.Log())
	}
	return warns
}

// pgHealth reads the health answer's status code and storage part.
func pgHealth(t *testing.T, p *caddyProc) (int, string) {
	t.Helper()
	code, body := p.admin(t, "GET", "/form_outbox/health")
	var h struct {
		Storage struct{ Error string }
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("health body %q: %v", body, err)
	}
	return code, h.Storage.Error
}

// Caddy with a DSN whose port has no server starts (and spools) but says once, at start,
// what is wrong, without the DSN's password; health answers 503 with the same cause.
func TestPostgresWrongPortWarnsOnceAtStart(t *testing.T) {
	t.Parallel()
	closed := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens there now
	dsn := "postgres://forms:hunter2-secret@" + closed + "/forms?sslmode=disable"
	p := newCaddy(t, caddyOpts{Caddyfile: fmt.Sprintf(pgStartupCaddyfile, dsn)})

	cause := "connection refused at " + closed
	warns := startupWarnings(t, p)
	if len(warns) != 1 || !strings.Contains(warns[0], `"level":"warn"`) || !strings.Contains(warns[0], cause) {
		t.Fatalf("start-up warnings %q, want one WARN naming %q", warns, cause)
	}
	if code, storageErr := pgHealth(t, p); code != 503 || !strings.Contains(storageErr, cause) {
		t.Fatalf("health %d storage error %q, want 503 naming %q", code, storageErr, cause)
	}
	if resp, answer := postJSON(t, p, `{"message":"while the database is away"}`, nil); resp.StatusCode != 200 || answer["status"] != "queued" {
		t.Fatalf("post with the database unreachable: %d %v, want 200 queued (spooled)", resp.StatusCode, answer)
	}
	if strings.Contains(p.Log(), "hunter2") {
		t.Fatalf("the log shows the DSN's password:\n%s", p.Log())
	}
}

// A DSN naming a database that does not exist on the server gets the same single warning,
// naming the database; health stays 503 until the database is created, then answers 200.
func TestPostgresMissingDatabaseWarnsAndHealthRecovers(t *testing.T) {
	t.Parallel()
	base := storetest.PostgresDSN(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	dbName := fmt.Sprintf("form_outbox_e2e_missing_%d", time.Now().UnixNano())
	u.Path = "/" + dbName
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before Caddy starts, so it runs after Caddy is killed.
	t.Cleanup(func() {
		admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{dbName}.Sanitize()+" WITH (FORCE)")
		admin.Close(context.Background())
	})
	p := newCaddy(t, caddyOpts{Caddyfile: fmt.Sprintf(pgStartupCaddyfile, u.String())})

	cause := fmt.Sprintf("database %q does not exist on %s", dbName, u.Host)
	warns := startupWarnings(t, p)
	if len(warns) != 1 || !strings.Contains(warns[0], strings.ReplaceAll(cause, `"`, `\"`)) {
		t.Fatalf("start-up warnings %q, want one naming %q", warns, cause)
	}
	if code, storageErr := pgHealth(t, p); code != 503 || storageErr != cause {
		t.Fatalf("health %d storage error %q, want 503 with %q", code, storageErr, cause)
	}

	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbName}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	var code int
	if err := waitFor(20*time.Second, func() bool { code, _ = pgHealth(t, p); return code == 200 }); err != nil {
		t.Fatalf("health %d after the database was created, want 200", code)
	}
}
