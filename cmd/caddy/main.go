// Command caddy is a Caddy build with the standard modules and the form_outbox plugin:
// the same binary that `xcaddy build --with github.com/formoutbox/caddy-form-outbox` makes.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/formoutbox/caddy-form-outbox"
)

func main() {
	caddycmd.Main()
}
