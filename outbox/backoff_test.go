package outbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

func fixed(v float64) func() float64 { return func() float64 { return v } }

func TestRetryDelaySchedule(t *testing.T) {
	var p outbox.RetryPolicy // defaults: 30s base, 6h cap, 20% jitter
	want := []time.Duration{
		30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute,
		16 * time.Minute, 32 * time.Minute, 64 * time.Minute, 128 * time.Minute, 256 * time.Minute,
		6 * time.Hour, 6 * time.Hour,
	}
	for i, w := range want {
		attempts := i + 1
		if got := p.Delay(attempts, fixed(0.5)); got != w {
			t.Errorf("Delay(%d) without jitter = %v, want %v", attempts, got, w)
		}
		if got, lo := p.Delay(attempts, fixed(0)), time.Duration(float64(w)*0.8); got != lo {
			t.Errorf("Delay(%d) at the low end = %v, want %v", attempts, got, lo)
		}
		if got, hi := p.Delay(attempts, fixed(0.999999999)), time.Duration(float64(w)*1.2); got < hi-time.Millisecond || got > hi {
			t.Errorf("Delay(%d) at the high end = %v, want about %v", attempts, got, hi)
		}
	}
	for _, attempts := range []int{63, 64, 1000, 1 << 30} {
		if got := p.Delay(attempts, fixed(0.5)); got != 6*time.Hour {
			t.Errorf("Delay(%d) = %v, want the 6h cap (no overflow)", attempts, got)
		}
	}
	// Real randomness stays within bounds.
	for range 1000 {
		if got := p.Delay(3, nil); got < 96*time.Second || got > 144*time.Second {
			t.Fatalf("Delay(3) = %v, outside 120s +-20%%", got)
		}
	}
}

func TestRetryPolicyOptions(t *testing.T) {
	p := outbox.RetryPolicy{Base: time.Second, MaxDelay: 10 * time.Second, Jitter: -1}
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second} {
		if got := p.Delay(attempts, fixed(0)); got != want {
			t.Errorf("Delay(%d) with jitter off = %v, want %v", attempts, got, want)
		}
	}
	if got := p.Next(1, &providers.Error{RetryAfter: time.Hour}, nil); got != time.Hour {
		t.Errorf("Next with Retry-After 1h = %v, want 1h (honoured past MaxDelay)", got)
	}
	if got := p.Next(4, &providers.Error{RetryAfter: time.Second}, nil); got != 8*time.Second {
		t.Errorf("Next with a short Retry-After = %v, want the longer backoff 8s", got)
	}
	if got := p.Next(2, providers.Classify(errors.New("x")), nil); got != 2*time.Second {
		t.Errorf("Next without Retry-After = %v", got)
	}
}
