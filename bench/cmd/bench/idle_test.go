package main

import (
	"strings"
	"testing"
	"time"
)

func TestIdleTargets(t *testing.T) {
	r := &report{idle: []idleResult{
		{store: "postgres", window: 2 * time.Minute, caddyCPU: 60 * time.Millisecond, pgCPU: 20 * time.Millisecond, xacts: 20},
		{store: "postgres", window: time.Minute, caddyCPU: 10 * time.Millisecond, xacts: 21},
		{store: "sqlite", window: 30 * time.Second, caddyCPU: 40 * time.Millisecond, xacts: -1},
	}}
	var b strings.Builder
	r.idleTargets(&b)
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"| Idle instance (postgres, worker on, defaults): CPU <= 60ms and <= 20 database transactions a minute | 40ms CPU (Caddy 60ms, PostgreSQL 20ms) and 10.0 transactions a minute (over 2m0s) | met |",
		"| Idle instance (postgres, worker on, defaults): CPU <= 60ms and <= 20 database transactions a minute | 10ms CPU (Caddy 10ms, PostgreSQL 0s) and 21.0 transactions a minute (over 1m0s) | **not met** |",
		"| Idle instance (sqlite, worker on, defaults): CPU <= 60ms a minute | 80ms a minute (Caddy; over 30s) | **not met** |",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows:\n%s", len(got), b.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
