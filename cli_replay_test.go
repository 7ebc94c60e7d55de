package formoutbox

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// The offline replay puts a spool folder's submissions into the given database.
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

	cmd := &cobra.Command{}
	replayFlags(cmd)
	if err := cmd.Flags().Parse([]string{"--spool", filepath.Join(dir, "spool"), "--storage", "sqlite"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runReplay(cmd, []string{"replay", db}, "", &out, false); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !strings.HasPrefix(out.String(), "stored 1, already stored 0, segments drained 1") {
		t.Errorf("output %q", out.String())
	}
	st := storetest.OpenSQLiteAt(t, db)
	if _, err := st.GetSubmission(context.Background(), sub.ID); err != nil {
		t.Fatalf("replayed submission: %v", err)
	}
}
