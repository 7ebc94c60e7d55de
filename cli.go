package formoutbox

// `caddy form-outbox` lives in internal/command, which registers it with Caddy's command
// line when it is imported; importing it here puts it into every Caddy built with this
// plugin (cmd/caddy, xcaddy).
import _ "github.com/formoutbox/caddy-form-outbox/internal/command"
