package command

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// The offline replay puts a spool folder's submissions into the given database, without
// asking any admin endpoint.
func TestOfflineReplayIntoSQLite(t *testing.T) {
	dir := t.TempDir()
	sp, err := spool.Open(filepath.Join(dir, "spool"), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sub := storetest.NewSubmission("contact")
	if err := sp.Append(spool.Entry{Submission: *sub, Deliveries: nil}); err != nil {
		t.Fatal(err)
	}
	sp.Close()
	db := filepath.Join(dir, "forms.db")

	admin := newFakeAdmin(t, nil)
	out, err := form(t, admin.addr(), "replay", "--spool", filepath.Join(dir, "spool"), "--storage", "sqlite", db)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !strings.HasPrefix(out, "stored 1, already stored 0, segments drained 1") {
		t.Errorf("output %q", out)
	}
	if got := admin.requests(); len(got) != 0 {
		t.Errorf("offline replay asked the admin endpoint: %v", got)
	}
	st := storetest.OpenSQLiteAt(t, db)
	if _, err := st.GetSubmission(context.Background(), sub.ID); err != nil {
		t.Fatalf("replayed submission: %v", err)
	}
}

// Without --spool replay asks the running Caddy; a half-given offline replay says what
// it needs and touches nothing.
func TestReplayArguments(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"POST /form_outbox/spool/replay": {200, `{"stored":2,"duplicates":1,"segments":1,"corrupt":0,"remaining":0}`},
	})
	out, err := form(t, admin.addr(), "replay")
	if err != nil {
		t.Fatal(err)
	}
	if out != "stored 2, already stored 1, segments drained 1, corrupt ranges kept aside 0, remaining 0\n" {
		t.Errorf("replay printed %q", out)
	}
	const need = "replay --spool DIR needs --storage sqlite PATH or --storage postgres DSN"
	for _, args := range [][]string{
		{"--spool", t.TempDir()},
		{"--spool", t.TempDir(), "--storage", "mysql", "x"},
		{"--spool", t.TempDir(), "--storage", "sqlite"},
		{"--storage", "sqlite", filepath.Join(t.TempDir(), "x.db")},
	} {
		if _, err := form(t, admin.addr(), append([]string{"replay"}, args...)...); err == nil || err.Error() != need {
			t.Errorf("replay %v: err %v", args, err)
		}
	}
	if _, err := form(t, admin.addr(), "replay", "extra"); err == nil {
		t.Errorf("replay with an argument and no --spool was accepted")
	}
	if got := admin.requests(); len(got) != 1 {
		t.Errorf("sent %v, want the one online replay", got)
	}
}
