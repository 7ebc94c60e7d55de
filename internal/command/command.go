// Package command is `caddy form-outbox`: one cobra subcommand per verb, each with only
// its own flags and its own --help, registered with Caddy's command line the way Caddy's
// own commands are. The verbs talk to the form_outbox admin routes (served by
// internal/adminapi/server.go) through internal/adminapi; the root imports this package only for its
// registration (cli.go there).
package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "form-outbox",
		Usage: "<command> [args] [--address <admin>]",
		Short: "Inspects and controls the form outbox of a running Caddy",
		Long: `
Talks to the form_outbox admin API of a running Caddy (the admin address is found the
way 'caddy reload' finds it: --address, else --config, else the default localhost:2019).

Tables by default; --json prints the API's JSON. Control characters in stored text
(ESC, BEL, C1 ...) are printed as \u00XX, never raw; only an export into a file or a
pipe keeps the exact bytes.

'caddy form-outbox <command> --help' describes a command and its flags.`,
		CobraFunc: Build,
	})
}

// verbs lists the subcommands in the order --help shows them.
var verbs = []func() *cobra.Command{
	statusCommand, listCommand, showCommand, retryCommand, releaseCommand, deleteCommand,
	exportCommand, replayCommand, destinationsCommand, parkCommand, unparkCommand,
	alertsCommand, ledgerCommand, checkCommand, restoreCommand,
}

// Build fills cmd, the `form-outbox` command Caddy made, with the verbs and the flags
// they share. Tests build the same tree on a bare cobra.Command.
func Build(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.String("address", "", "The address of Caddy's admin API")
	pf.StringP("config", "c", "", "Configuration file (to find the admin address)")
	pf.StringP("adapter", "a", "", "Name of config adapter")
	var names []string
	for _, v := range verbs {
		sub := v()
		names = append(names, sub.Name())
		cmd.AddCommand(sub)
	}
	// Without a RunE cobra would answer an unknown verb with the help text and success;
	// a script that misspells a verb must fail instead.
	want := strings.Join(names, ", ")
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("form-outbox needs a command: %s", want)
		}
		return fmt.Errorf("unknown form-outbox command %q (want %s)", safetext.Terminal(args[0]), want)
	}
}

// env is what a verb runs with.
type env struct {
	cmd *cobra.Command
	// out is stdout escaped for a terminal: stored text is written by visitors, and a raw
	// ESC or C1 control in it would drive the operator's terminal
	// (internal/safetext/terminal.go). JSON stays valid JSON with the same values.
	out io.Writer
	// stdout is the unescaped output, which only an export into a file or pipe uses.
	stdout io.Writer
	// asJSON is --json, on the verbs that have it.
	asJSON bool
}

// run adapts a verb to cobra: it sets up the escaped output and flushes it, and escapes
// the error cobra prints, since an error can quote what the API or the operator sent.
func run(verb func(e *env, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		stdout := cmd.OutOrStdout()
		out := safetext.NewWriter(stdout)
		e := &env{cmd: cmd, out: out, stdout: stdout}
		if f := cmd.Flags().Lookup("json"); f != nil {
			e.asJSON = f.Value.String() == "true"
		}
		err := verb(e, args)
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			return escapedError{err}
		}
		return nil
	}
}

// escapedError prints its error with control characters escaped and still unwraps to it.
type escapedError struct{ err error }

func (e escapedError) Error() string { return safetext.Terminal(e.err.Error()) }
func (e escapedError) Unwrap() error { return e.err }

// client resolves the admin address the way `caddy reload` does (--address, else
// --config, else the default) and returns a client for it.
func (e *env) client() (*adminapi.Client, error) {
	f := e.cmd.Flags()
	addrFlag, _ := f.GetString("address")
	cfgFile, _ := f.GetString("config")
	adapter, _ := f.GetString("adapter")
	addr, err := caddycmd.DetermineAdminAPIAddress(addrFlag, nil, cfgFile, adapter)
	if err != nil {
		return nil, fmt.Errorf("admin address: %w", err)
	}
	na, err := caddy.ParseNetworkAddress(addr)
	if err != nil {
		return nil, fmt.Errorf("invalid admin address %s: %w", addr, err)
	}
	if na.PortRangeSize() > 1 {
		return nil, fmt.Errorf("invalid admin address %s: a port range, want one port", addr)
	}
	host := na.JoinHostPort(0)
	if na.IsUnixNetwork() {
		// A unix admin address may end in |MODE, the socket's file permissions, which
		// are not part of its path.
		host, _, _ = strings.Cut(na.Host, "|")
	}
	return adminapi.New(na.Network, host), nil
}

// call requests one admin route and prints its JSON answer raw (--json) or through table.
func call[T any](e *env, method, path string, q url.Values, table func(io.Writer, T)) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	body, err := c.Call(e.cmd.Context(), method, path, q)
	if err != nil {
		return err
	}
	return printBody(body, e, table)
}

func printBody[T any](body []byte, e *env, table func(io.Writer, T)) error {
	if e.asJSON {
		_, err := e.out.Write(body)
		return err
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	table(e.out, v)
	return nil
}

// isStatus reports whether err is an admin API answer with that HTTP status.
func isStatus(err error, status int) bool {
	var ae *adminapi.Error
	return errors.As(err, &ae) && ae.Status == status
}
