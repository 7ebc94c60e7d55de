package formoutbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "form-outbox",
		Usage: "status|list|show|retry|release|delete|export [args] [--address <admin>] [--json]",
		Short: "Inspects and controls the form outbox of a running Caddy",
		Long: `
Talks to the form_outbox admin API of a running Caddy (the admin address is found the
way 'caddy reload' finds it: --address, else --config, else the default localhost:2019).

  status                       health: storage, worker, backlog, oldest due, dead
  list [--form F] [--status S] [--since T] [--until T] [--limit N] [--cursor C]
                               submissions, newest first (T: RFC 3339, 2006-01-02 or 24h)
  list --deliveries [--status dead]
                               deliveries by status
  show ID                      a submission (or a delivery) with its deliveries and attempts
  retry DELIVERY_ID            make a dead or failed delivery pending again
  release SUBMISSION_ID        accept a quarantined or spam submission and send it
  delete SUBMISSION_ID         erase a submission and its deliveries (erasure request)
  export [--format ndjson|csv] [filters]
                               stream matching submissions to stdout (exact
                               into a file or pipe, control characters shown as
                               \u00XX on a terminal)
  replay                       replay the spool into the database now
  replay --spool DIR --storage sqlite PATH | --storage postgres DSN
                               offline: replay a spool folder into that database

Tables by default; --json prints the API's JSON. Control characters in stored text
(ESC, BEL, C1 ...) are printed as \u00XX, never raw; only an export into a file or a
pipe keeps the exact bytes.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Args = cobra.MinimumNArgs(1)
			f := cmd.Flags()
			f.String("address", "", "The address of Caddy's admin API")
			f.StringP("config", "c", "", "Configuration file (to find the admin address)")
			f.StringP("adapter", "a", "", "Name of config adapter")
			f.Bool("json", false, "Print JSON instead of tables")
			f.Bool("deliveries", false, "list: list deliveries instead of submissions")
			for _, p := range []string{"form", "status", "since", "until", "limit", "cursor", "format"} {
				f.String(p, "", "filter: "+p)
			}
			replayFlags(cmd)
			cmd.RunE = runCLI
		},
	})
}

func runCLI(cmd *cobra.Command, args []string) error {
	f := cmd.Flags()
	addrFlag, _ := f.GetString("address")
	cfgFile, _ := f.GetString("config")
	adapter, _ := f.GetString("adapter")
	asJSON, _ := f.GetBool("json")
	addr, err := caddycmd.DetermineAdminAPIAddress(addrFlag, nil, cfgFile, adapter)
	if err != nil {
		return fmt.Errorf("admin address: %w", err)
	}
	q := url.Values{}
	for _, p := range []string{"form", "status", "since", "until", "limit", "cursor", "format"} {
		if v, _ := f.GetString(p); v != "" {
			q.Set(p, v)
		}
	}
	// Everything printed goes through the terminal escaping: stored text is written by
	// visitors, and a raw ESC or C1 control in it would drive the operator's terminal
	// (internal/safetext/terminal.go). JSON stays valid JSON with the same values.
	stdout := cmd.OutOrStdout()
	out := safetext.NewWriter(stdout)
	err = runVerb(cmd, args, addr, q, stdout, out, asJSON)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// runVerb runs one form-outbox command, printing to out (escaped for a terminal);
// stdout is the unescaped output, which only an export into a file or pipe uses.
func runVerb(cmd *cobra.Command, args []string, addr string, q url.Values, stdout, out io.Writer, asJSON bool) error {
	needID := func() (string, error) {
		if len(args) != 2 {
			return "", fmt.Errorf("%s needs exactly one id", args[0])
		}
		return url.PathEscape(args[1]), nil
	}
	f := cmd.Flags()
	switch args[0] {
	case "status":
		return cliCall(addr, http.MethodGet, "health", nil, out, asJSON, printHealth)
	case "list":
		if d, _ := f.GetBool("deliveries"); d {
			return cliCall(addr, http.MethodGet, "deliveries", q, out, asJSON, printDeliveries)
		}
		return cliCall(addr, http.MethodGet, "submissions", q, out, asJSON, printSubmissions)
	case "show":
		id, err := needID()
		if err != nil {
			return err
		}
		err = cliCall(addr, http.MethodGet, "submissions/"+id, nil, out, asJSON, printSubmission)
		if err != nil && strings.Contains(err.Error(), "HTTP 404") {
			// Not a submission: perhaps a delivery id, as `list --deliveries` shows.
			return cliCall(addr, http.MethodGet, "deliveries/"+id, nil, out, asJSON, printDelivery)
		}
		return err
	case "retry", "release", "delete":
		id, err := needID()
		if err != nil {
			return err
		}
		method, path := http.MethodPost, "deliveries/"+id+"/retry"
		switch args[0] {
		case "release":
			path = "submissions/" + id + "/release"
		case "delete":
			method, path = http.MethodDelete, "submissions/"+id
		}
		return cliCall(addr, method, path, nil, out, asJSON, printResult)
	case "replay":
		return runReplay(cmd, args, addr, out, asJSON)
	case "export":
		resp, err := caddycmd.AdminAPIRequest(addr, http.MethodGet, adminPrefix+"export?"+q.Encode(), nil, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		// Into a file or a pipe the export is data and stays exact; on a terminal it is
		// read by eye, and escaped like everything else.
		dst := stdout
		if isTerminal(stdout) {
			dst = out
		}
		_, err = io.Copy(dst, resp.Body)
		return err
	}
	return fmt.Errorf("unknown form-outbox command %q (want status, list, show, retry, release, delete or export)", args[0])
}

// cliCall requests one admin route and prints its JSON answer raw or through table.
// A 503 from health still has a body worth printing; the command then fails.
func cliCall[T any](addr, method, path string, q url.Values, out io.Writer, asJSON bool, table func(io.Writer, T)) error {
	uri := adminPrefix + path
	if len(q) > 0 {
		uri += "?" + q.Encode()
	}
	resp, err := caddycmd.AdminAPIRequest(addr, method, uri, nil, nil)
	if err != nil {
		// AdminAPIRequest folds error answers into err, body included.
		if path == "health" && strings.Contains(err.Error(), "HTTP 503") {
			if i := strings.Index(err.Error(), "{"); i >= 0 {
				body := err.Error()[i:]
				_ = printBody([]byte(body), out, asJSON, table)
			}
			return fmt.Errorf("form_outbox is unhealthy")
		}
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	return printBody(body, out, asJSON, table)
}

func printBody[T any](body []byte, out io.Writer, asJSON bool, table func(io.Writer, T)) error {
	if asJSON {
		_, err := out.Write(body)
		return err
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	table(out, v)
	return nil
}

// isTerminal reports whether w is a terminal (not a file, pipe or buffer).
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// table lines up tab-separated cells. Its input is escaped before the tabwriter measures
// it, so a cell holding a control character is as wide as what the terminal shows.
type table struct {
	*safetext.Writer
	tw *tabwriter.Writer
}

func tw(out io.Writer) table {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	return table{Writer: safetext.NewWriter(w), tw: w}
}

func (t table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.tw.Flush()
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func printHealth(out io.Writer, h Health) {
	w := tw(out)
	fmt.Fprintf(w, "status\t%s\n", h.Status)
	for _, p := range h.Problems {
		fmt.Fprintf(w, "problem\t%s\n", p)
	}
	storage := "reachable"
	if !h.Storage.Reachable {
		storage = "UNREACHABLE: " + h.Storage.Error
	}
	fmt.Fprintf(w, "storage\t%s %s (%.1f ms)\n", h.Storage.Driver, storage, h.Storage.LatencyMS)
	fmt.Fprintf(w, "worker\trunning=%v, last poll %.0fs ago (poll interval %.0fs)\n",
		h.Worker.Running, h.Worker.SinceLastTickSecs, h.Worker.PollIntervalSeconds)
	if o := h.Outbox; o != nil {
		fmt.Fprintf(w, "backlog\t%d (due now %d, oldest due %.0fs)\n", o.Backlog, o.Due, o.OldestDueSeconds)
		fmt.Fprintf(w, "dead\t%d\n", o.Dead)
	}
	if s := h.Spool; s != nil {
		fmt.Fprintf(w, "spool\tenabled=%v depth=%d\n", s.Enabled, s.Depth)
	}
	w.Flush()
}

func printSubmissions(out io.Writer, p pageView[submissionView]) {
	w := tw(out)
	fmt.Fprintln(w, "ID\tCREATED\tFORM\tSTATUS\tREASON")
	for _, s := range p.Items {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.ID, ts(s.CreatedAt), s.Form, s.Status, s.Reason)
	}
	w.Flush()
	printNext(out, p.Next)
}

func printDeliveries(out io.Writer, p pageView[deliveryView]) {
	w := tw(out)
	fmt.Fprintln(w, "ID\tSUBMISSION\tROUTE\tCHANNEL\tSTATUS\tATTEMPTS\tLAST ERROR")
	for _, d := range p.Items {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", d.ID, d.SubmissionID, d.Route, d.Channel,
			d.Status, d.Attempts, d.MaxAttempts, oneLine(d.LastError))
	}
	w.Flush()
	printNext(out, p.Next)
}

func printNext(out io.Writer, next string) {
	if next != "" {
		fmt.Fprintf(out, "more: --cursor %s\n", next)
	}
}

func printSubmission(out io.Writer, s submissionView) {
	w := tw(out)
	fmt.Fprintf(w, "id\t%s\nform\t%s\nstatus\t%s %s\ncreated\t%s\n", s.ID, s.Form, s.Status, s.Reason, ts(s.CreatedAt))
	for _, f := range s.Data {
		fmt.Fprintf(w, "field %s\t%s\n", f.Name, oneLine(f.Value))
	}
	w.Flush()
	for _, d := range s.Deliveries {
		fmt.Fprintln(out)
		printDelivery(out, d)
	}
}

func printDelivery(out io.Writer, d deliveryView) {
	w := tw(out)
	fmt.Fprintf(w, "delivery\t%s\nroute\t%s (%s) -> %s\nstatus\t%s, %d/%d attempts\n",
		d.ID, d.Route, d.Channel, d.Recipient, d.Status, d.Attempts, d.MaxAttempts)
	if d.LastError != "" {
		fmt.Fprintf(w, "last error\t%s\n", oneLine(d.LastError))
	}
	for _, a := range d.History {
		fmt.Fprintf(w, "  attempt %d\t%s %s %s %d %s\n", a.Attempt, ts(a.FinishedAt), a.Outcome, a.Provider, a.HTTPStatus, oneLine(a.Error))
	}
	w.Flush()
}

func printResult(out io.Writer, r map[string]string) {
	fmt.Fprintf(out, "%s %s\n", r["id"], r["result"])
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
