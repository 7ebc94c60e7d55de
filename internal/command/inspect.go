package command

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
)

func statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Health: storage, worker, backlog, oldest due, dead, canaries",
		Long: `
Prints the health of form_outbox: whether the database answers, whether the delivery
worker is passing, the backlog, the oldest due delivery and the dead count, and each
canary route's last verdict. Fails (exit status 1) when form_outbox is unhealthy, after
printing why; a failed canary alone is not unhealthy.`,
		Args: cobra.NoArgs,
		RunE: run(runStatus),
	}
	addJSONFlag(cmd)
	return cmd
}

func runStatus(e *env, _ []string) error {
	err := call(e, http.MethodGet, "health", nil, printHealth)
	// An unhealthy Caddy answers 503 with the full health body: print it, then fail.
	var ae *adminapi.Error
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
		_ = printBody(ae.Body, e, printHealth)
		return errors.New("form_outbox is unhealthy")
	}
	return err
}

// submissionFilters are the query flags of `list` (and, but cursor and limit, `export`).
var submissionFilters = []string{"form", "status", "since", "until", "limit", "cursor"}

// deliveryFilters are the query flags GET /form_outbox/deliveries takes.
var deliveryFilters = []string{"status", "limit", "cursor"}

func listCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--form F] [--status S] [--since T] [--until T] [--limit N] [--cursor C] | --deliveries [--status S]",
		Short: "Lists submissions (or deliveries), newest first",
		Long: `
Lists submissions, newest first, a page at a time: when there are more, the last line
says which --cursor prints the next page.

With --deliveries it lists deliveries instead; --status is then a delivery status
(pending, sending, failed, sent, dead or skipped), and only --limit and --cursor
apply besides.`,
		Args: cobra.NoArgs,
		RunE: run(runList),
	}
	addQueryFlags(cmd, submissionFilters...)
	cmd.Flags().Lookup("status").Usage = "only items in this status: accepted, spam or quarantined; with --deliveries: pending, sending, failed, sent, dead or skipped"
	cmd.Flags().Bool("deliveries", false, "List deliveries instead of submissions")
	addJSONFlag(cmd)
	return cmd
}

func runList(e *env, _ []string) error {
	if d, _ := e.cmd.Flags().GetBool("deliveries"); d {
		for _, n := range []string{"form", "since", "until"} {
			if e.cmd.Flags().Changed(n) {
				return fmt.Errorf("list --deliveries takes no --%s (only --status, --limit and --cursor)", n)
			}
		}
		return call(e, http.MethodGet, "deliveries", query(e.cmd, deliveryFilters...), printDeliveries)
	}
	return call(e, http.MethodGet, "submissions", query(e.cmd, submissionFilters...), printSubmissions)
}

func showCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Shows a submission (or a delivery) with its deliveries and attempts",
		Long: `
Shows the submission ID: its fields, then each delivery with its attempts. ID may
also be a delivery id, as 'list --deliveries' prints them; then that delivery alone
is shown.`,
		Args: oneID,
		RunE: run(runShow),
	}
	addJSONFlag(cmd)
	return cmd
}

func runShow(e *env, args []string) error {
	id := url.PathEscape(args[0])
	err := call(e, http.MethodGet, "submissions/"+id, nil, printSubmission)
	if isStatus(err, http.StatusNotFound) {
		// Not a submission: perhaps a delivery id, as `list --deliveries` shows.
		return call(e, http.MethodGet, "deliveries/"+id, nil, printDelivery)
	}
	return err
}

// oneID is the Args check of the verbs that act on one id.
func oneID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%s needs exactly one id", cmd.Name())
	}
	return nil
}
