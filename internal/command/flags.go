package command

import (
	"net/url"

	"github.com/spf13/cobra"
)

// filterHelp is the --help text of each query flag; a verb adds the ones its route takes.
var filterHelp = map[string]string{
	"form":   "only submissions of this form",
	"status": "only submissions in this status: accepted, spam or quarantined",
	"since":  "only submissions created at or after T (RFC 3339, 2006-01-02, or a duration ago: 24h)",
	"until":  "only submissions created before T (same forms as --since)",
	"limit":  "at most N items on this page",
	"cursor": "the page after the one that printed 'more: --cursor C'",
	"format": "ndjson (default) or csv",
}

// addQueryFlags adds the named query flags to cmd; query reads them back.
func addQueryFlags(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		cmd.Flags().String(n, "", filterHelp[n])
	}
}

// query is the admin API query of the named flags that were given.
func query(cmd *cobra.Command, names ...string) url.Values {
	q := url.Values{}
	for _, n := range names {
		if v, _ := cmd.Flags().GetString(n); v != "" {
			q.Set(n, v)
		}
	}
	return q
}

// addJSONFlag adds --json to a verb whose answer is a JSON document (not export).
func addJSONFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("json", false, "Print the API's JSON instead of a table")
}
