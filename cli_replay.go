package formoutbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// replayFlags adds the flags of `caddy form-outbox replay`.
func replayFlags(cmd *cobra.Command) {
	cmd.Flags().String("spool", "", "replay: a spool directory to replay without a running Caddy")
	cmd.Flags().String("storage", "", "replay --spool: sqlite or postgres, followed by PATH or DSN")
}

// runReplay is `caddy form-outbox replay`: one replay pass in the running Caddy (admin
// API), or with --spool DIR --storage sqlite PATH|postgres DSN, offline: the folder is
// replayed straight into that database (Caddy must not be running on that folder).
func runReplay(cmd *cobra.Command, args []string, addr string, out io.Writer, asJSON bool) error {
	dir, _ := cmd.Flags().GetString("spool")
	if dir == "" {
		return cliCall(addr, http.MethodPost, "spool/replay", nil, out, asJSON, printReplay)
	}
	driver, _ := cmd.Flags().GetString("storage")
	if len(args) != 2 || (driver != DriverSQLite && driver != DriverPostgres) {
		return fmt.Errorf("replay --spool DIR needs --storage sqlite PATH or --storage postgres DSN")
	}
	ctx := context.Background()
	var store outbox.Store
	var err error
	if driver == DriverSQLite {
		store, err = sqlitestore.Open(ctx, args[1])
	} else {
		store, err = pgstore.Open(ctx, pgstore.Config{DSN: args[1]})
	}
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer store.Close()
	sp, err := spool.Open(dir, spool.Options{})
	if errors.Is(err, spool.ErrInUse) {
		return fmt.Errorf("replay: %w; that Caddy replays its own spool: run this command without --spool to ask it through its admin endpoint", err)
	}
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer sp.Close()
	rep, err := sp.Replay(ctx, store, nil)
	printReplay(out, replayAnswer{Stored: rep.Stored, Duplicates: rep.Duplicates,
		Segments: rep.Segments, Corrupt: rep.Corrupt, Remaining: rep.Remaining})
	return err
}

func printReplay(out io.Writer, r replayAnswer) {
	fmt.Fprintf(out, "stored %d, already stored %d, segments drained %d, corrupt ranges kept aside %d, remaining %d\n",
		r.Stored, r.Duplicates, r.Segments, r.Corrupt, r.Remaining)
	if r.Error != "" {
		fmt.Fprintf(out, "stopped: %s\n", r.Error)
	}
}
