package inbox

import (
	_ "embed"
	"net/http"
)

//go:embed static/inbox.css
var css []byte

// setSecurityHeaders makes every answer of the inbox, error pages included, safe to show:
// no script at all, styles only from our own stylesheet, no framing, forms only to us.
func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

func serveCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(css) // a client that hung up needs no stylesheet
}
