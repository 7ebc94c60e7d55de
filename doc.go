// Package formoutbox is the Caddy layer of form_outbox.
package formoutbox
