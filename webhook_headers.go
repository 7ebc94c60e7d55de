package formoutbox

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/providers/webhook"
)

// resolveWebhookHeaders resolves a route's headers with Caddy's placeholders
// (providers/webhook/headers.go checks them) for the handler (handler.go).
func resolveWebhookHeaders(repl *caddy.Replacer, hs map[string]string) (map[string]string, error) {
	return webhook.ResolveHeaders(hs, func(v string) string { return repl.ReplaceKnown(v, "") })
}
