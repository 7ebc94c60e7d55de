package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
)

// Instructions per intake request (issue 21, target 5): a figure that does not move with
// the machine's load. The bench runs itself as a child under `valgrind --tool=callgrind`
// (instrChild): the intake hot path in process, intake.Config.Serve with the App's
// outbox.Acceptor on the PostgreSQL store, one request at a time into a recorder (no HTTP
// server, no load generator; PostgreSQL's own work is in its process and not counted).
// Two children, with instrLow and instrHigh requests after the same warm-up, are counted
// whole; their difference over the difference in requests is the cost of one request,
// start-up and warm-up cancelled out.
const (
	instrWarm = 100
	instrLow  = 200
	instrHigh = 1200
	// instrSchema holds the children's tables.
	instrSchema = "bench_instr"
)

type instrResult struct {
	perRequest float64 // instructions
	low, high  int64   // totals of the two children
}

var totalsRE = regexp.MustCompile(`(?m)^(?:totals|summary): ([0-9]+)`)

func benchInstr(ctx context.Context, cfg *config, r *report) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return fmt.Errorf("valgrind is not installed (Debian package valgrind)")
	}
	_ = dropSchema(ctx, cfg.dsn, instrSchema)
	defer dropSchema(context.Background(), cfg.dsn, instrSchema)
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: instrSchema})
	if err != nil {
		return err
	}
	st.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	count := func(n int) (int64, error) {
		out := filepath.Join(cfg.tmp, fmt.Sprintf("callgrind.%d.out", n))
		cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out, self, "-instr-child", strconv.Itoa(n))
		// Async preemption signals trip callgrind (an assertion in its signal handling).
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOGC=100", "GODEBUG=asyncpreemptoff=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("callgrind child (%d requests): %v: %s", n, err, lastLines(b, 5))
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return 0, err
		}
		m := totalsRE.FindSubmatch(data)
		if m == nil {
			return 0, fmt.Errorf("callgrind output %s has no totals", out)
		}
		return strconv.ParseInt(string(m[1]), 10, 64)
	}
	logf("instructions: callgrind, %d and %d requests", instrLow, instrHigh)
	lo, err := count(instrLow)
	if err != nil {
		return err
	}
	hi, err := count(instrHigh)
	if err != nil {
		return err
	}
	r.instr = instrResult{perRequest: float64(hi-lo) / float64(instrHigh-instrLow), low: lo, high: hi}
	logf("  %.0f instructions per request (totals %d and %d)", r.instr.perRequest, lo, hi)
	return nil
}

// instrChild serves instrWarm and then n intake requests, one at a time (under callgrind).
func instrChild(dsn string, n int) error {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: dsn, Schema: instrSchema})
	if err != nil {
		return err
	}
	defer st.Close()
	form := &intake.Config{
		Form:   "contact",
		Fields: []intake.FieldSpec{{Name: "message", Required: true}},
		Routes: []intake.Route{
			{Channel: outbox.ChannelWebhook, URL: "http://127.0.0.1:9/a"},
			{Channel: outbox.ChannelWebhook, URL: "http://127.0.0.1:9/b"},
		},
		IPHashKey: []byte("bench-instructions-key-000000000"),
	}
	if err := form.Provision(); err != nil {
		return err
	}
	acc := &outbox.Acceptor{Store: st}
	for i := range instrWarm + n {
		body := fmt.Sprintf(`{"message":"bench %d"}`, i)
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/contact", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "127.0.0.1:50000"
		w := httptest.NewRecorder()
		form.Serve(w, req, acc, nil)
		if w.Code != http.StatusOK {
			return fmt.Errorf("request %d: %d %s", i, w.Code, w.Body.String())
		}
	}
	return nil
}

func (r *report) instrTargets(b *strings.Builder) {
	if r.instr.perRequest > 0 {
		fmt.Fprintf(b, "| Instructions per intake request (callgrind; tracked from run to run, no limit) | %.0f | measured |\n", r.instr.perRequest)
	}
}

func (r *report) instrSection(b *strings.Builder) {
	if r.instr.perRequest == 0 {
		return
	}
	b.WriteString("\n## Instructions per intake request (`-only instr`)\n\n")
	fmt.Fprintf(b, "`valgrind --tool=callgrind` counts every instruction of an in-process run of the intake hot path: `intake.Config.Serve` (JSON body, one required field, two webhook routes) with the App's `outbox.Acceptor` on the PostgreSQL store, one request at a time into a recorder; PostgreSQL's own work and the HTTP server are not counted. Two runs after the same %d-request warm-up, of %d and %d requests, counted %d and %d instructions: **%.0f instructions per request**. The figure does not move with the machine's load; compare it from run to run.\n",
		instrWarm, instrLow, instrHigh, r.instr.low, r.instr.high, r.instr.perRequest)
}
