package intake

import (
	"net/http"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// WriteAnswer writes the answer after the store committed (or found a duplicate).
func (c *Config) WriteAnswer(w http.ResponseWriter, r *http.Request, res *Result, stored outbox.AcceptResult) {
	w.WriteHeader(http.StatusOK)
}

// WriteError answers a *RequestError, and any other error as 503 with Retry-After.
func (c *Config) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	w.WriteHeader(http.StatusServiceUnavailable)
}
