package main

import (
	"strings"
	"testing"
	"time"
)

func p99s(ms ...int) []point {
	out := make([]point, len(ms))
	for i, m := range ms {
		out[i] = point{p99: time.Duration(m) * time.Millisecond}
	}
	return out
}

// The retention target compares the medians of the windows' p99s (one slow window on a
// shared machine moves neither side) and is met only when the one while pruning is
// within 1.5x, every window with retention ran inside its pass and nothing old is left;
// otherwise the run fails with its line.
func TestPruneTargetVerdict(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*pruneResult)
		met    bool
		want   string // in the Measured cell
	}{
		{"within 1.5x of the median", func(p *pruneResult) { p.on = p99s(15, 90, 6) }, true, "15.00 ms vs 10.00 ms = 1.50x"},
		{"over 1.5x", func(p *pruneResult) { p.on = p99s(16, 16, 1) }, false, "16.00 ms vs 10.00 ms = 1.60x"},
		{"an even count", func(p *pruneResult) { p.off, p.on = p99s(10, 12), p99s(15, 18) }, true, "16.50 ms vs 11.00 ms = 1.50x"},
		{"pass ended first", func(p *pruneResult) { p.duringPass = false }, false, "a pass ended before its window did"},
		{"rows left", func(p *pruneResult) { p.left, p.pruned = 3, 999 }, false, "999 of 1000 submissions pruned"},
		{"nothing measured", func(p *pruneResult) { p.on = nil }, false, "0.00 ms vs 10.00 ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &pruneResult{
				n: 1000, pruned: 1000, lastPass: 800, duringPass: true, batchSize: 500,
				longest: 40 * time.Millisecond, pass: 2 * time.Second,
				off: p99s(9, 10, 300), on: p99s(12, 11, 10),
			}
			c.change(p)
			r := &report{prune: p}
			var b strings.Builder
			r.pruneTarget(&b)
			line := b.String()
			if !strings.Contains(line, c.want) {
				t.Errorf("line %q lacks %q", line, c.want)
			}
			if got := len(unmet("## Targets\n\n" + line)); got != map[bool]int{true: 0, false: 1}[c.met] {
				t.Errorf("met = %v, but unmet found %d lines in %q", c.met, got, line)
			}
			if !strings.Contains(line, "400 submissions/s") {
				t.Errorf("line %q: the rate is the last pass's submissions over its time (800 in 2 s)", line)
			}
		})
	}
}
