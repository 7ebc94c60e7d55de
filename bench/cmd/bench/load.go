package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The HTTP load generator is wrk (Debian package wrk): a closed loop of N keep-alive
// connections, each sending its next request as soon as the answer arrives. It is written
// in C and costs the 2-core machines these figures come from about a sixth of a core at
// 3,000 requests/s, where a Go generator (vegeta, used before) took a third of a core
// away from the server it measured. The pgbench baseline's own client is C too.

// wrkPost makes every request a distinct JSON submission (thread number, the thread's
// counter and a random number), so that intake's double-post detection never answers
// one from memory. tid and n are globals: setup runs in the main Lua state and
// thread:set writes a global of the thread's own state.
// done prints one machine-readable line that wrkRun parses.
const wrkPost = `
threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
tid, n = 0, 0
function init(args) math.randomseed(os.time() * 1000 + tid) end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function request()
  n = n + 1
  return wrk.format(nil, nil, nil, string.format('{"message":"bench %d %d %d"}', tid, n, math.random(1, 2000000000)))
end
`

const wrkDone = `
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("BENCH %d %d %d %d %d %d\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status, latency:percentile(50), latency:percentile(99)))
end
`

// wrkBin finds wrk, installing the Debian package when running as root.
func wrkBin() (string, error) {
	if p, err := exec.LookPath("wrk"); err == nil {
		return p, nil
	}
	if os.Geteuid() == 0 {
		logf("installing wrk (apt-get install -y wrk)")
		if out, err := exec.Command("apt-get", "install", "-y", "wrk").CombinedOutput(); err != nil {
			return "", fmt.Errorf("wrk is not installed and apt-get install wrk failed: %v: %s", err, lastLines(out, 3))
		}
		return exec.LookPath("wrk")
	}
	return "", fmt.Errorf("wrk is not installed: install the Debian package wrk (apt-get install wrk)")
}

// load drives url with conns connections for dur: POSTs of distinct submissions when post,
// else GETs. The rate counts 2xx/3xx answers only.
func load(cfg *config, url string, conns int, dur time.Duration, post bool) (point, error) {
	bin, err := wrkBin()
	if err != nil {
		return point{}, err
	}
	script := wrkDone
	if post {
		script = wrkPost + wrkDone
	}
	path := filepath.Join(cfg.tmp, "load.lua")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return point{}, err
	}
	out, err := exec.Command(bin, "-t", strconv.Itoa(min(conns, 2)), "-c", strconv.Itoa(conns),
		"-d", fmt.Sprintf("%ds", max(int(dur.Seconds()), 1)), "--timeout", "10s", "-s", path, url).CombinedOutput()
	if err != nil {
		return point{}, fmt.Errorf("wrk: %v: %s", err, lastLines(out, 5))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 7 || f[0] != "BENCH" {
			continue
		}
		var v [6]int64
		for i := range v {
			if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				return point{}, fmt.Errorf("wrk: bad summary %q", sc.Text())
			}
		}
		requests, micros, sockErrs, status := v[0], v[1], v[2], v[3]
		ok := requests - status
		p := point{
			rate:     float64(ok) / (float64(micros) / 1e6),
			p50:      time.Duration(v[4]) * time.Microsecond,
			p99:      time.Duration(v[5]) * time.Microsecond,
			success:  1,
			answered: ok,
		}
		if total := requests + sockErrs; total > 0 {
			p.success = float64(ok) / float64(total)
		}
		return p, nil
	}
	return point{}, fmt.Errorf("wrk: no summary in its output: %s", lastLines(out, 5))
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], " | ")
}
