package intake

import "net/http"

const (
	// corsMaxAge is how long a browser may cache a preflight answer, in seconds.
	corsMaxAge = "600"
	// corsAllowHeaders are the request headers a cross-origin post may send.
	corsAllowHeaders = "Content-Type, Accept, " + headerIdempotencyKey
)

// setCORSHeaders adds the CORS response headers for a POST from an allowed origin, so a
// fetch() from that site can read the answer (including Retry-After on a 429). Other
// origins get no CORS headers: their script cannot read the answer, although the post
// itself is still stored (as quarantined/origin_rejected).
func (c *Config) setCORSHeaders(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !c.isAllowedOrigin(origin) {
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Access-Control-Expose-Headers", "Retry-After")
}

// preflight answers an OPTIONS request. An allowed origin asking to POST gets 204 with
// the CORS grant (methods POST; headers Content-Type, Accept and Idempotency-Key); a
// preflight from any other origin, or for another method, gets 403 and no grant, which
// the browser reports as a CORS error before anything is posted. Without
// allowed_origins, OPTIONS gets a bare 204: cross-origin posting is then not enabled.
func (c *Config) preflight(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	w.Header().Set("Allow", "OPTIONS, POST")
	if len(c.AllowedOrigins) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	origin := r.Header.Get("Origin")
	method := r.Header.Get("Access-Control-Request-Method")
	if !c.isAllowedOrigin(origin) || (method != "" && method != http.MethodPost) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("cross-origin posts to this form are not allowed from this origin\n"))
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", http.MethodPost)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}
