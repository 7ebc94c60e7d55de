package outbox_test

import (
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// The worker reports the tick it really runs, its default applied, so health judges a
// stuck worker by the same number.
func TestWorkerReportsItsResolvedPollInterval(t *testing.T) {
	s := storetest.OpenSQLite(t)
	if got := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(fake.New("f"))}).PollInterval(); got != outbox.DefaultPollInterval {
		t.Errorf("poll interval without one set = %v, want the default %v", got, outbox.DefaultPollInterval)
	}
	if got := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: router(fake.New("f")), PollInterval: time.Minute}).PollInterval(); got != time.Minute {
		t.Errorf("poll interval set to 1m = %v", got)
	}
}

// A delivery planned without a budget falls back to its channel's default, the same
// numbers intake plans with (intake/plan.go).
func TestDefaultAttemptsPerChannel(t *testing.T) {
	if e, w := outbox.DefaultAttempts(outbox.ChannelEmail), outbox.DefaultAttempts(outbox.ChannelWebhook); e != 8 || w != 10 {
		t.Errorf("default attempts: email %d webhook %d, want 8 and 10", e, w)
	}
}
