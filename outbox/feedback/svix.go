package feedback

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSvixTolerance is how far a Svix timestamp may be from our clock.
const DefaultSvixTolerance = 5 * time.Minute

// svixKey decodes a whsec_... secret into the HMAC key.
func svixKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(secret), "whsec_")
	if !ok {
		return nil, errors.New("secret must start with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("secret is not whsec_ followed by base64")
	}
	return key, nil
}

// verifySvix checks the svix-id, svix-timestamp and svix-signature headers of body:
// one of the space-separated "v1,<base64>" signatures must be the HMAC-SHA256 of
// "id.timestamp.body", and the timestamp within tolerance of now. It returns the id.
func verifySvix(h http.Header, body []byte, key []byte, tolerance time.Duration, now time.Time) (string, error) {
	id, ts, sigs := h.Get("svix-id"), h.Get("svix-timestamp"), h.Get("svix-signature")
	if id == "" || ts == "" || sigs == "" {
		return "", refuse(http.StatusUnauthorized, "missing svix signature headers", nil)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", refuse(http.StatusUnauthorized, "malformed svix-timestamp", err)
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return "", refuse(http.StatusUnauthorized, "stale svix-timestamp", nil)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return id, nil
		}
	}
	return "", refuse(http.StatusUnauthorized, "invalid svix signature", nil)
}
