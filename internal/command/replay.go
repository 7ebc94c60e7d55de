package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

func replayCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay [--spool DIR --storage sqlite PATH | --storage postgres DSN]",
		Short: "Replays the spool into the database now",
		Long: `
Without flags, asks the running Caddy to replay its spool into the database now
instead of at the replayer's next tick.

With --spool DIR --storage sqlite PATH (or --storage postgres DSN), works offline:
the spool folder is replayed straight into that database. Caddy must not be running
on that folder; if it is, run replay without --spool.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("spool") || cmd.Flags().Changed("storage") {
				return nil // runReplay explains what --spool needs
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: run(runReplay),
	}
	cmd.Flags().String("spool", "", "A spool directory to replay without a running Caddy")
	cmd.Flags().String("storage", "", "With --spool: sqlite or postgres, followed by PATH or DSN")
	addJSONFlag(cmd)
	return cmd
}

// runReplay is one replay pass in the running Caddy (admin API), or with --spool, offline.
func runReplay(e *env, args []string) error {
	dir, _ := e.cmd.Flags().GetString("spool")
	if dir == "" && !e.cmd.Flags().Changed("storage") {
		return call(e, http.MethodPost, "spool/replay", nil, printReplay)
	}
	driver, _ := e.cmd.Flags().GetString("storage")
	if dir == "" || len(args) != 1 || (driver != sqlitestore.Name && driver != pgstore.Name) {
		return fmt.Errorf("replay --spool DIR needs --storage sqlite PATH or --storage postgres DSN")
	}
	return replayOffline(e.cmd.Context(), dir, driver, args[0], e.out)
}

// replayOffline replays the spool folder dir straight into the database (Caddy must not
// be running on that folder: the spool's lock refuses a second owner).
func replayOffline(ctx context.Context, dir, driver, target string, out io.Writer) error {
	store, err := openStore(ctx, driver, target) // restore.go
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
	printReplay(out, adminapi.Replay{Stored: rep.Stored, Duplicates: rep.Duplicates,
		Segments: rep.Segments, Corrupt: rep.Corrupt, Remaining: rep.Remaining})
	return err
}
