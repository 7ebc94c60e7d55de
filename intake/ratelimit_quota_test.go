package intake

import (
	"testing"
	"time"
)

// Concurrent over-limit posts reach the quota out of order: one that read the clock
// earlier may arrive after a later one opened the window. It must count against that
// window, not open a new one (which let a flood store one row past max_stored).
func TestRateLimitStoreQuotaHoldsForOutOfOrderClocks(t *testing.T) {
	l := newLimiter(RateLimit{Requests: 1, Window: Duration(10 * time.Minute), MaxClients: 10, MaxStored: 1})
	if !l.storeQuota(testNow.Add(time.Millisecond)) {
		t.Fatal("the first row of the window was refused")
	}
	if l.storeQuota(testNow) {
		t.Error("a post whose clock read predates the window's start got a second row past the quota")
	}
}
