package command

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

func restoreCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore --since T [--until T] [--form F] [--dry-run] [--from s3://BUCKET/PREFIX --storage sqlite PATH | --storage postgres DSN]",
		Short: "Stores the backed-up submissions of a time window that the database lacks",
		Long: `
Without --storage, asks the running Caddy to restore from its own bucket (the
form_outbox 'backup' option) into its database, through the admin API.

With --from and --storage, works without a running Caddy (a new host, before or after
Caddy starts): reads the off-host backups (the form_outbox 'backup' option) of submissions created in
[--since, --until), checks each object's SHA-256, and stores into the database every
submission it lacks, with the deliveries planned for it at intake; the worker then sends
the pending ones. A submission already stored (same id, or an idempotency key bound to
the same content) is left alone, so a window wider than the outage stores only the
missing ones, and a second run stores nothing. Submissions erased in this database stay
erased. --dry-run prints what would be stored and writes nothing.

The bucket's credentials come from the AWS SDK's default chain: AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, or an instance role.
See docs/operations.md, "Off-host backups", for what a restore can send twice.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("storage") {
				return nil // runRestore explains what --storage needs
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: run(runRestore),
	}
	f := cmd.Flags()
	f.String("from", "", "The backup location, s3://BUCKET/PREFIX as in the backup option")
	f.String("endpoint", "", "The S3 endpoint URL of a self-hosted or non-AWS store")
	f.String("region", "", "The bucket's region (default us-east-1)")
	f.Bool("path-style", false, "Bucket in the path, as most self-hosted servers want")
	f.String("storage", "", "sqlite or postgres, followed by PATH or DSN")
	f.String("since", "", filterHelp["since"])
	f.String("until", "", "only submissions created before T (same forms as --since; default now)")
	f.String("form", "", filterHelp["form"])
	f.Bool("dry-run", false, "Print what would be stored; write nothing")
	f.Bool("skip-deliveries", false, "Store the submissions with every delivery skipped: nothing is sent again (nor what was never sent)")
	addJSONFlag(cmd)
	return cmd
}

func runRestore(e *env, args []string) error {
	f := e.cmd.Flags()
	get := func(n string) string { v, _ := f.GetString(n); return v }
	from, driver := get("from"), get("storage")
	dry, _ := f.GetBool("dry-run")
	skip, _ := f.GetBool("skip-deliveries")
	if get("since") == "" {
		return fmt.Errorf("restore needs --since T")
	}
	if driver == "" && from == "" {
		q := query(e.cmd, "since", "until", "form")
		if dry {
			q.Set("dry_run", "1")
		}
		if skip {
			q.Set("skip_deliveries", "1")
		}
		return call(e, http.MethodPost, "backup/restore", q, printRestore)
	}
	if from == "" || len(args) != 1 || (driver != sqlitestore.Name && driver != pgstore.Name) {
		return fmt.Errorf("restore without a running Caddy needs --from s3://BUCKET/PREFIX and --storage sqlite PATH or --storage postgres DSN")
	}
	now := time.Now()
	w := backup.Window{Form: get("form"), Until: now}
	var err error
	if w.Since, err = adminapi.ParseWhen(get("since"), now); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if u := get("until"); u != "" {
		if w.Until, err = adminapi.ParseWhen(u, now); err != nil {
			return fmt.Errorf("--until: %w", err)
		}
	}
	pathStyle, _ := f.GetBool("path-style")
	ctx := e.cmd.Context()
	bucket, err := backup.NewS3(ctx, backup.Config{URL: from, Endpoint: get("endpoint"), Region: get("region"), PathStyle: pathStyle})
	if err != nil {
		return err
	}
	store, err := openStore(ctx, driver, args[0])
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer store.Close()
	rep, err := backup.Restore(ctx, bucket, bucket.Prefix, store, w, backup.RestoreOptions{DryRun: dry, SkipDeliveries: skip})
	if e.asJSON {
		if jerr := json.NewEncoder(e.out).Encode(rep); jerr != nil {
			return jerr
		}
	} else {
		printRestore(e.out, rep)
	}
	return err
}

// openStore opens the database a command writes to without a running Caddy.
func openStore(ctx context.Context, driver, target string) (outbox.Store, error) {
	if driver == sqlitestore.Name {
		return sqlitestore.Open(ctx, target)
	}
	return pgstore.Open(ctx, pgstore.Config{DSN: target})
}

// printRestore prints one line per submission stored (or, dry, to store) and a summary.
// Ids, forms and times only: the records' fields are visitor data.
func printRestore(out io.Writer, rep backup.RestoreReport) {
	verb := "stored"
	if rep.DryRun {
		verb = "would store"
	}
	for _, r := range rep.Restored {
		fmt.Fprintf(out, "%s %s form=%s created=%s deliveries=%d\n", verb, r.ID, r.Form,
			r.CreatedAt.UTC().Format(time.RFC3339), r.Deliveries)
	}
	fmt.Fprintf(out, "objects: %d  records in window: %d  %s: %d  already stored: %d  erased: %d  corrupt objects: %d\n",
		rep.Objects, rep.Records, verb, rep.Stored, rep.Present, rep.Erased, rep.Corrupt)
}
