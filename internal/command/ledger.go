package command

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func ledgerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger [--form F]... [--days N]",
		Short: "The lead ledger: answered, stored and delivered per form and day",
		Long: `
Prints the lead ledger of the last N UTC days (default 7): per day, one line per form
with the posts answered success, spooled and replayed, the stored submissions by
status, erasures and the deliveries sent, pending (pending, failed, sending), parked
and dead, then one line per route. CHECK says ok, or the mismatch: answered posts the
rows, the spool and erasures do not account for (closed days only), or accepted
submissions without a delivery. docs/operations.md, "Lead ledger", says how to read
one.

Fails (exit status 1) when a line shows a mismatch, after printing the ledger.`,
		Args: cobra.NoArgs,
		RunE: run(runLedger),
	}
	cmd.Flags().StringArray("form", nil, "only this form (repeat for several)")
	cmd.Flags().Int("days", adminapi.DefaultLedgerDays, fmt.Sprintf("how many UTC days, ending today (1 to %d)", adminapi.MaxLedgerDays))
	addJSONFlag(cmd)
	return cmd
}

func runLedger(e *env, _ []string) error {
	q := url.Values{}
	forms, _ := e.cmd.Flags().GetStringArray("form")
	for _, f := range forms {
		q.Add("form", f)
	}
	if e.cmd.Flags().Changed("days") {
		days, _ := e.cmd.Flags().GetInt("days")
		q.Set("days", strconv.Itoa(days))
	}
	var mismatches int
	err := call(e, http.MethodGet, "ledger", q, func(out io.Writer, l adminapi.Ledger) {
		printLedger(out, l)
		mismatches = l.Mismatches
	})
	if err != nil {
		return err
	}
	if e.asJSON {
		return nil // the JSON says it; scripts read "mismatches"
	}
	if mismatches > 0 {
		return fmt.Errorf("the ledger shows %d mismatched lines", mismatches)
	}
	return nil
}

// printLedger prints a table per UTC day, newest first: a form's line, then its routes'.
func printLedger(out io.Writer, l adminapi.Ledger) {
	if len(l.Days) == 0 {
		fmt.Fprintf(out, "no submissions and no answers from %s to %s (UTC)\n", l.From, l.Until)
		return
	}
	for i := len(l.Days) - 1; i >= 0; {
		day := l.Days[i].Day
		state := "open"
		if l.Days[i].Closed {
			state = "closed"
		}
		fmt.Fprintf(out, "%s (UTC, %s)\n", day, state)
		w := tw(out)
		fmt.Fprintln(w, "FORM\tROUTE\tANSWERED\tSPOOLED\tREPLAYED\tACCEPTED\tSPAM\tQUARANTINED\tERASED\tSENT\tPENDING\tPARKED\tDEAD\tCHECK")
		// Lines are oldest day first, then by form: walk this day's back to its first.
		j := i
		for j >= 0 && l.Days[j].Day == day {
			j--
		}
		for _, d := range l.Days[j+1 : i+1] {
			fmt.Fprintf(w, "%s\t*\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", d.Form,
				d.Answered, d.Spooled, d.Replayed, d.Accepted, d.Spam, d.Quarantined, d.Erased,
				d.Sent, d.Pending, d.Parked, d.Dead, ledgerCheck(d))
			for _, r := range d.Routes {
				fmt.Fprintf(w, "%s\t%s\t\t\t\t\t\t\t\t%d\t%d\t%d\t%d\t\n", d.Form, r.Route, r.Sent, r.Pending, r.Parked, r.Dead)
			}
		}
		_ = w.Flush()
		fmt.Fprintln(out)
		i = j
	}
	fmt.Fprintf(out, "mismatches: %d\n", l.Mismatches)
}

// ledgerCheck is a line's CHECK cell.
func ledgerCheck(d adminapi.LedgerDay) string {
	if len(d.Mismatches) == 0 {
		return "ok"
	}
	return "MISMATCH: " + strings.Join(outbox.DescribeMismatches(d.Mismatches, d.Unaccounted, d.Undelivered), ", ")
}
