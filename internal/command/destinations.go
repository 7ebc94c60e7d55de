package command

import (
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
)

// The parked destinations (docs/operations.md, "Parked destinations"): list, park and
// unpark, over GET /form_outbox/destinations and POST .../park and .../unpark.

func destinationsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "destinations",
		Short: "Lists the parked destinations and the leads they hold",
		Long: `
Lists the destinations that are parked: a webhook, chat or e-mail account that kept
failing (or that an operator parked), whose deliveries wait in status parked without
spending attempts. For each: its key (what park and unpark take), what it is, why and
since when it is parked, when the next probe tries it, and how many deliveries and
leads it holds.`,
		Args: cobra.NoArgs,
		RunE: run(func(e *env, _ []string) error {
			return call(e, http.MethodGet, "destinations", nil, printDestinations)
		}),
	}
	addJSONFlag(cmd)
	return cmd
}

func parkCommand() *cobra.Command {
	return keyCommand("park KEY", "Parks a destination by hand: its deliveries wait", `
Parks the destination KEY (as 'destinations' prints it, or a delivery's destination:
webhook:<hash>, slack:<hash>, telegram:<chat id>, email:<providers>). Its deliveries
are held as they come due, spending no attempt, and no probe runs: only 'unpark'
resumes them. Nothing is dropped.`, "park")
}

func unparkCommand() *cobra.Command {
	return keyCommand("unpark KEY", "Unparks a destination: its held deliveries resume in order", `
Unparks the destination KEY: every delivery it holds becomes pending at once and is
sent in the order the leads came. Fails when KEY is not parked.`, "unpark")
}

// keyCommand is a verb that sends one request about the destination key it is given.
func keyCommand(use, short, long, action string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%s needs exactly one destination key", cmd.Name())
			}
			return nil
		},
		RunE: run(func(e *env, args []string) error {
			return call(e, http.MethodPost, "destinations/"+action, url.Values{"key": {args[0]}}, printKeyResult)
		}),
	}
	addJSONFlag(cmd)
	return cmd
}

func printDestinations(out io.Writer, d adminapi.Destinations) {
	if len(d.Destinations) == 0 {
		fmt.Fprintln(out, "no parked destinations")
		return
	}
	w := tw(out)
	fmt.Fprintln(w, "KEY\tDESTINATION\tREASON\tPARKED\tNEXT PROBE\tHELD\tLEADS")
	for _, p := range d.Destinations {
		next := "manual: unpark by hand"
		if p.NextProbe != nil {
			next = ts(*p.NextProbe)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", p.Key, p.Label, oneLine(p.Reason), ts(p.Since), next, p.Held, p.Leads)
	}
	w.Flush()
}

func printKeyResult(out io.Writer, r map[string]any) {
	fmt.Fprintf(out, "%v %v", r["key"], r["result"])
	if n, ok := r["resumed"]; ok {
		fmt.Fprintf(out, " (%v deliveries resumed)", n)
	}
	fmt.Fprintln(out)
}
