// Package browserclient holds the form_outbox browser client (client.js) and serves it.
// The script is embedded in the binary, so a site needs no build step: it adds
//
//	<script src="/contact?form_outbox=client.js" defer></script>
//
// and data-form-outbox on its form. The handler is mounted on the form's exact path
// (form_outbox /contact in examples/contact-form/Caddyfile), so the script is asked for
// with a query on that path rather than with a path suffix, which would not reach it.
package browserclient

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// Param is the query parameter that asks the form_outbox handler for the script.
const Param = "form_outbox"

//go:embed client.js
var source []byte

var (
	hash     = contentHash(source)
	etag     = `"` + hash + `"`
	gzipped  = compress(source)
	hashName = "client." + hash + ".js"
)

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func compress(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	// Writing to a bytes.Buffer cannot fail.
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// HashedName is the script's name with its content hash, for
// ?form_outbox=client.<hash>.js: that URL never changes meaning, so it is cached for a year.
func HashedName() string { return hashName }

// Wants reports whether r asks for the script (GET or HEAD with ?form_outbox=client…js).
func Wants(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	name := r.URL.Query().Get(Param)
	return strings.HasPrefix(name, "client.") && strings.HasSuffix(name, ".js")
}

// Serve writes the script. The hashed name is immutable for a year; the stable name and
// any other hash (a page cached from before a deploy) get the current script with
// no-cache, so they are revalidated with the ETag and never pin an old version.
func Serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.URL.Query().Get(Param) == hashName {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("ETag", etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if inm := r.Header.Get("If-None-Match"); inm != "" && matchesETag(inm) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := source
	if acceptsGzip(r) {
		body = gzipped
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func matchesETag(inm string) bool {
	for tag := range strings.SplitSeq(inm, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == etag || tag == "*" {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(h, ",") {
			coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
				return true
			}
		}
	}
	return false
}
