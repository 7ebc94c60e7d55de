package intake

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// contentHash fingerprints what the visitor sent (form + data), independent of field
// order, so identical posts can be recognised across retries that lack an idempotency
// key. NUL separators are unambiguous because Parse refuses NUL in names and values.
func contentHash(form string, data outbox.Fields) string {
	sorted := slices.Clone(data)
	slices.SortStableFunc(sorted, func(a, b outbox.Field) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	h.Write([]byte(form))
	h.Write([]byte{0})
	for _, f := range sorted {
		h.Write([]byte(f.Name))
		h.Write([]byte{0})
		h.Write([]byte(f.Value))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
