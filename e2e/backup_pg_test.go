package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/internal/s3test"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// On PostgreSQL: the database is lost (a new, empty schema stands in for the new one);
// `restore --storage postgres` brings every submission back, and a second run stores
// nothing.
func TestBackupRestorePostgresIdempotent(t *testing.T) {
	t.Parallel()
	s3 := s3test.Start(t, "forms")
	hook := newReceiver(t)
	src := storetest.NewPostgresSchemaName(t)
	cf := strings.Replace(backupCaddyfile, "\tform_outbox {\n",
		fmt.Sprintf("\tform_outbox {\n\t\tstorage postgres %q {\n\t\t\tschema %s\n\t\t}\n", src.DSN, src.Schema), 1)
	cf = strings.NewReplacer("{{S3}}", s3.URL(), "{{HOOK}}", hook.srv.URL).Replace(cf)
	c := newCaddy(t, caddyOpts{Caddyfile: cf, Env: s3Env})
	ids := postAccepted(t, c, "pg", 5)
	if err := waitFor(10*time.Second, func() bool { return backedUp(t, s3) == len(ids) }); err != nil {
		t.Fatalf("backed up %d of %d\n%s", backedUp(t, s3), len(ids), c.Log())
	}

	dst := storetest.NewPostgresSchema(t)
	dsn := dst.DSN + "&search_path=" + dst.Schema
	if !strings.Contains(dst.DSN, "?") {
		dsn = dst.DSN + "?search_path=" + dst.Schema
	}
	restore := func() string {
		t.Helper()
		cmd := exec.Command(caddyBin, "form-outbox", "restore", "--from", "s3://forms/site-a", "--endpoint", s3.URL(),
			"--path-style", "--since", "1h", "--storage", "postgres", dsn)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := restore(); !strings.Contains(out, "stored: 5 ") {
		t.Fatalf("restore into an empty database:\n%s", out)
	}
	got := pgIDs(t, dst.DSN, dst.Schema)
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("submission %s not in the new database (%d there)", id, len(got))
		}
	}
	if out := restore(); !strings.Contains(out, "stored: 0 ") || !strings.Contains(out, "already stored: 5 ") {
		t.Fatalf("second restore:\n%s", out)
	}
	if n := len(pgIDs(t, dst.DSN, dst.Schema)); n != len(ids) {
		t.Fatalf("after the second restore: %d rows, want %d", n, len(ids))
	}
}

// pgIDs reads the submission ids of one schema.
func pgIDs(t *testing.T, dsn, schema string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id::text FROM `+pgx.Identifier{schema, "submissions"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}
