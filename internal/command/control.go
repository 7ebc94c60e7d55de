package command

import (
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

// The verbs that change one record. Each answers {"id": ..., "result": ...}.

func retryCommand() *cobra.Command {
	return controlCommand("retry DELIVERY_ID", "Makes a dead or failed delivery pending again", `
Makes the dead or failed delivery DELIVERY_ID (as 'list --deliveries' prints it)
pending again, with a fresh attempt budget and its history kept. Fix the cause first
(a receiver's URL, a provider's quota).`,
		func(id string) (string, string) { return http.MethodPost, "deliveries/" + id + "/retry" })
}

func releaseCommand() *cobra.Command {
	return controlCommand("release SUBMISSION_ID", "Accepts a quarantined or spam submission and sends it", `
Accepts the quarantined or spam submission SUBMISSION_ID: it becomes accepted and
its skipped deliveries become pending; a submission.released event records what it
was before.`,
		func(id string) (string, string) { return http.MethodPost, "submissions/" + id + "/release" })
}

func deleteCommand() *cobra.Command {
	return controlCommand("delete SUBMISSION_ID", "Erases a submission and its deliveries (erasure request)", `
Erases the submission SUBMISSION_ID, its deliveries and their attempts in one
transaction, for an erasure request; a submission.erased event keeps only the id and
the form name. Copies already delivered (mailboxes, webhook receivers) are not
touched.`,
		func(id string) (string, string) { return http.MethodDelete, "submissions/" + id })
}

// controlCommand is a verb that sends one request about the id it is given.
func controlCommand(use, short, long string, route func(id string) (method, path string)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  oneID,
		RunE: run(func(e *env, args []string) error {
			method, path := route(url.PathEscape(args[0]))
			return call(e, method, path, nil, printResult)
		}),
	}
	addJSONFlag(cmd)
	return cmd
}
