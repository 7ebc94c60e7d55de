package adminapi

import (
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// A waiting spool is healthy (the storage check reports the outage); a spool that
// cannot be written is not, until an append succeeds again.
func TestSpoolHealthOf(t *testing.T) {
	if h := SpoolHealthFor(nil); !h.Healthy || h.Enabled {
		t.Errorf("spool off: %+v, want healthy and not enabled", h)
	}
	h := SpoolHealthOf(spool.Stats{Entries: 7, Oldest: time.Now().Add(-time.Minute)}, time.Minute)
	if !h.Healthy || !h.Enabled || h.Depth != 7 || h.OldestAgeSeconds != 60 || h.Error != "" {
		t.Errorf("spool with a backlog: %+v, want healthy with depth 7 and age 60", h)
	}
	at := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	h = SpoolHealthOf(spool.Stats{AppendError: "write seg-1.spool: no space left on device", AppendErrorAt: at}, 0)
	if h.Healthy || !strings.Contains(h.Error, "no space left on device") || !strings.Contains(h.Error, "2026-11-29T22:00:00Z") {
		t.Errorf("spool whose last append failed: %+v, want unhealthy with the error and its time", h)
	}
}
