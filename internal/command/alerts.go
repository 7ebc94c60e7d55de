package command

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
)

func alertsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts [--resolved N]",
		Short: "Lists the open owner alerts (and the last N resolved)",
		Long: `
Lists the owner alerts that are open: what happened, how many leads are affected,
since when, and how many notices were sent. --resolved N also lists the N most recently
resolved ones. An alert resolves by itself once its condition is gone (a dead delivery
retried, the spool drained); see docs/operations.md, "Alerts".`,
		Args: cobra.NoArgs,
		RunE: run(runAlerts),
	}
	cmd.Flags().Int("resolved", 0, "Also list this many of the most recently resolved alerts")
	addJSONFlag(cmd)
	return cmd
}

func runAlerts(e *env, _ []string) error {
	n, _ := e.cmd.Flags().GetInt("resolved")
	var q url.Values
	if n > 0 {
		q = url.Values{"resolved": {strconv.Itoa(n)}}
	}
	return call(e, http.MethodGet, "alerts", q, printAlerts)
}

func printAlerts(out io.Writer, l adminapi.AlertList) {
	if len(l.Open) == 0 {
		fmt.Fprintln(out, "no open alerts")
	}
	w := tw(out)
	if len(l.Open) > 0 {
		fmt.Fprintln(w, "OPEN SINCE\tKIND\tKEY\tLEADS\tNOTICES\tSUMMARY")
		for _, a := range l.Open {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\n", ts(a.OpenedAt), a.Kind, a.Key, a.Affected, a.Notices, oneLine(a.Summary))
		}
	}
	if len(l.Resolved) > 0 {
		fmt.Fprintln(w, "\nRESOLVED\tKIND\tKEY\tLEADS\tNOTICES\tSUMMARY")
		for _, a := range l.Resolved {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\n", ts(*a.ResolvedAt), a.Kind, a.Key, a.Affected, a.Notices, oneLine(a.Summary))
		}
	}
	w.Flush()
}
