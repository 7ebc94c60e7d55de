package command

import (
	"io"
	"net/http"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// exportFilters are the query flags GET /form_outbox/export takes: it streams every
// match, so there is no --limit or --cursor.
var exportFilters = []string{"form", "status", "since", "until", "format"}

func exportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export [--format ndjson|csv] [--form F] [--status S] [--since T] [--until T]",
		Short: "Streams matching submissions to stdout as NDJSON or CSV",
		Long: `
Streams every matching submission to stdout, newest first, as NDJSON (one JSON object
a line, the default) or CSV. Into a file or a pipe the bytes are exact; on a terminal
control characters are shown as \u00XX.`,
		Args: cobra.NoArgs,
		RunE: run(runExport),
	}
	addQueryFlags(cmd, exportFilters...)
	return cmd
}

func runExport(e *env, _ []string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	body, err := c.Open(e.cmd.Context(), http.MethodGet, "export", query(e.cmd, exportFilters...))
	if err != nil {
		return err
	}
	defer body.Close()
	// Into a file or a pipe the export is data and stays exact; on a terminal it is
	// read by eye, and escaped like everything else.
	dst := e.stdout
	if isTerminal(e.stdout) {
		dst = e.out
	}
	_, err = io.Copy(dst, body)
	return err
}

// isTerminal reports whether w is a terminal (not a file, pipe or buffer).
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
