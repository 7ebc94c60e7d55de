package formoutbox

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

// AppName is the App's module ID and the name of the global option that configures it.
const AppName = "form_outbox"

func init() {
	caddy.RegisterModule(new(App))
	caddy.RegisterModule(new(Handler))
	httpcaddyfile.RegisterGlobalOption(AppName, parseGlobalOption)
	httpcaddyfile.RegisterDirective(AppName, parseDirective)
	// A form handler answers the POST itself and passes every other method on, so it
	// belongs before respond/file_server; registering the order spares users an `order` line.
	httpcaddyfile.RegisterDirectiveOrder(AppName, httpcaddyfile.Before, "respond")
}
