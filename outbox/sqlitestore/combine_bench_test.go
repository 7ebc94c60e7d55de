package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers"
)

// instantSender sends nothing and succeeds at once: the store is what is measured.
type instantSender struct{ sent atomic.Int64 }

func (s *instantSender) Send(context.Context, outbox.Delivery) (providers.Result, error) {
	s.sent.Add(1)
	return providers.Result{Provider: "bench", MessageID: "m"}, nil
}

// BenchmarkIntakeWithWorker is intake as the App runs it on SQLite (group commit, one
// shared accept at a time, 32 callers, two webhook deliveries per submission) beside a
// running worker at its defaults with a sender that succeeds at once: one write per
// transaction (MaxSharedWrites 1, every write its own commit as before combine.go)
// against the default. Besides the rates (which follow the machine's load) it reports the
// commits and the process's CPU per submission. Alternate the two to compare them:
//
//	go test ./outbox/sqlitestore -run '^$' -bench 'IntakeWithWorker/shared=1$' -benchtime 3000x
//	go test ./outbox/sqlitestore -run '^$' -bench 'IntakeWithWorker/shared=default$' -benchtime 3000x
func BenchmarkIntakeWithWorker(b *testing.B) {
	for _, shared := range []int{1, 0} {
		name := "shared=default"
		if shared == 1 {
			name = "shared=1"
		}
		b.Run(name, func(b *testing.B) { benchIntakeWithWorker(b, shared) })
	}
}

func benchIntakeWithWorker(b *testing.B, shared int) {
	ctx := context.Background()
	s, err := sqlitestore.OpenWith(ctx, filepath.Join(b.TempDir(), "outbox.db"), sqlitestore.Options{MaxSharedWrites: shared})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sender := &instantSender{}
	w := outbox.NewWorker(outbox.WorkerConfig{Store: s, Sender: sender, PollInterval: 50 * time.Millisecond})
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var commits atomic.Int64
	sqlitestore.SetWriteHooks(s, nil, func(int) error { commits.Add(1); return nil })
	g := &outbox.GroupCommitter{Flushers: 1}
	const callers = 32
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0, c0 := time.Now(), processCPU(b), commits.Load()
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				sub := storetest.NewSubmission("contact")
				ds := []outbox.Delivery{storetest.NewDelivery(sub, "a", "http://a.example/hook"), storetest.NewDelivery(sub, "b", "http://b.example/hook")}
				if _, err := g.Accept(ctx, s, sub, ds); err != nil {
					b.Error(fmt.Errorf("accept: %w", err))
					return
				}
				w.Wake()
			}
		})
	}
	wg.Wait()
	el, cpu := time.Since(start), processCPU(b)-cpu0
	sentDuring, nCommits := sender.sent.Load(), commits.Load()-c0
	b.StopTimer()
	if err := w.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "accepted/s")
	b.ReportMetric(float64(sentDuring)/2/el.Seconds(), "delivered/s")
	b.ReportMetric(float64(nCommits)/float64(b.N), "commits/submission")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/submission")
}

// processCPU is the process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
