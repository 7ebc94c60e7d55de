package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/internal/doctor"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
)

func checkCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check --config FILE",
		Short: "Before going live: the store and every route's provider, sending nothing",
		Long: `
Loads the config as 'caddy validate' does (adapting a Caddyfile, provisioning every
module, so every load-time error and warning shows), then connects to the store and
reports its migration level, and asks every route's provider, and every target of the
owner alerts, a question that sends nothing: SES GetAccount, the Resend domains (the sender's must be verified), an SMTP
session up to AUTH and QUIT before MAIL FROM, Telegram getMe and getChat, and for webhook, Slack,
Discord and Teams URLs a TCP connection and TLS handshake, with no HTTP request.

Prints one line per route or alert target, 'ready' or what is wrong, and exits with status 0 only
when every line is ready. It needs no running Caddy.`,
		Args: cobra.NoArgs,
		RunE: run(runCheck),
	}
	cmd.Flags().Duration("timeout", doctor.DefaultTimeout, "How long each probe may take")
	return cmd
}

func runCheck(e *env, _ []string) error {
	f := e.cmd.Flags()
	cfgFile, _ := f.GetString("config")
	adapter, _ := f.GetString("adapter")
	timeout, _ := f.GetDuration("timeout")
	if cfgFile == "" {
		return errors.New("check needs the config to check: --config FILE")
	}
	raw, _, _, err := caddycmd.LoadConfig(cfgFile, adapter)
	if err != nil {
		return err
	}
	raw = caddy.RemoveMetaFields(raw)
	var cfg *caddy.Config
	if err := caddy.StrictUnmarshalJSON(raw, &cfg); err != nil {
		return fmt.Errorf("decoding config: %w", err)
	}
	if err := caddy.Validate(cfg); err != nil {
		return err
	}
	in, err := doctorInput(raw)
	if err != nil {
		return err
	}
	in.Timeout = timeout
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lines, ok := doctor.Check(ctx, in)
	for _, l := range lines {
		fmt.Fprintln(e.out, l.String())
	}
	if !ok {
		return errors.New("not every route is ready")
	}
	return nil
}

// doctorInput reads what the doctor checks from the adapted JSON config: the form_outbox
// App (storage and e-mail) and every form_outbox handler, wherever it stands in the HTTP
// routes, with placeholders ({env.X}) resolved as Caddy resolves them at provision.
func doctorInput(raw []byte) (doctor.Input, error) {
	var in doctor.Input
	var top struct {
		Apps map[string]json.RawMessage `json:"apps"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return in, fmt.Errorf("decoding config: %w", err)
	}
	var app caddyconf.App
	if a := top.Apps[caddyconf.AppName]; a != nil {
		if err := json.Unmarshal(a, &app); err != nil {
			return in, fmt.Errorf("decoding the %s app: %w", caddyconf.AppName, err)
		}
	}
	repl := caddy.NewReplacer()
	resolve := func(s string) string { return repl.ReplaceKnown(s, "") }
	var sc caddyconf.StorageConfig
	if app.Storage != nil {
		sc = *app.Storage
	}
	var err error
	if in.Store, err = storage.Resolve(storage.Config(sc), resolve, caddyconf.DefaultStorePath(caddy.AppDataDir())); err != nil {
		return in, err
	}
	from := caddyconf.DefaultFrom
	if app.Email != nil && app.Email.From != "" {
		from = resolve(app.Email.From)
	}
	in.Email = app.Email.Resolved(from, app.MailDir(caddy.AppDataDir()), resolve)
	if al := app.Alerts; al != nil && !al.Disabled {
		in.AlertEmail = len(al.Email) > 0
		for _, r := range al.Notify {
			r.Token = resolve(r.Token)
			in.AlertRoutes = append(in.AlertRoutes, r)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["handler"] == "form_outbox" {
				if b, err := json.Marshal(v); err == nil {
					var c intake.Config
					if json.Unmarshal(b, &c) == nil {
						for i := range c.Routes {
							c.Routes[i].Token = resolve(c.Routes[i].Token)
						}
						in.Forms = append(in.Forms, c)
					}
				}
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var httpApp any
	if h := top.Apps["http"]; h != nil {
		if err := json.Unmarshal(h, &httpApp); err != nil {
			return in, fmt.Errorf("decoding the http app: %w", err)
		}
	}
	walk(httpApp)
	// The walk meets servers in map order; the report lists forms by name.
	sort.SliceStable(in.Forms, func(i, j int) bool { return in.Forms[i].Form < in.Forms[j].Form })
	return in, nil
}
