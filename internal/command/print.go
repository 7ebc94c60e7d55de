package command

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
)

// The tables the verbs print without --json.

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

func printHealth(out io.Writer, h adminapi.Health) {
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
	for _, c := range h.Canary {
		verdict := "passed"
		if !c.Passed {
			verdict = "FAILED: " + oneLine(c.Error)
			if c.FailingSince != nil {
				verdict = "FAILED since " + ts(*c.FailingSince) + ": " + oneLine(c.Error)
			}
		}
		fmt.Fprintf(w, "canary\t%s/%s (%s) %s at %s\n", c.Form, c.Route, c.Channel, verdict, ts(c.At))
	}
	w.Flush()
}

func printSubmissions(out io.Writer, p adminapi.Page[adminapi.Submission]) {
	w := tw(out)
	fmt.Fprintln(w, "ID\tCREATED\tFORM\tSTATUS\tREASON")
	for _, s := range p.Items {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.ID, ts(s.CreatedAt), s.Form, s.Status, s.Reason)
	}
	w.Flush()
	printNext(out, p.Next)
}

func printDeliveries(out io.Writer, p adminapi.Page[adminapi.Delivery]) {
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

func printSubmission(out io.Writer, s adminapi.Submission) {
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

func printDelivery(out io.Writer, d adminapi.Delivery) {
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
func printReplay(out io.Writer, r adminapi.Replay) {
	fmt.Fprintf(out, "stored %d, already stored %d, segments drained %d, corrupt ranges kept aside %d, remaining %d\n",
		r.Stored, r.Duplicates, r.Segments, r.Corrupt, r.Remaining)
	if r.Error != "" {
		fmt.Fprintf(out, "stopped: %s\n", r.Error)
	}
}
