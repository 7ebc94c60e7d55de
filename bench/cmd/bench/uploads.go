package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// uploadsCaddyfile is one form taking a file (docs/caddyfile.md, "File uploads") on
// PostgreSQL, intake only, with dedupe off so that repeated bytes are each stored.
const uploadsCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	storage file_system {{DIR}}/caddy
	form_outbox {
		storage {{STORAGE}}
		worker off
	}
}
http://127.0.0.1:{{PORT}} {
	form_outbox /apply {
		form apply
		field name required
		field cv file required max_size 11MB types application/pdf
		max_body 12MB
		dedupe off
		notify webhook http://127.0.0.1:9/a
	}
	respond /ceiling "ok" 200
}
`

// uploadsResult is what the uploads part measured.
type uploadsResult struct {
	conns             int
	rate, mbps        float64
	p50, p99          time.Duration
	ok, failed        int64
	queued, bigQueued int64 // answered from the spool: the store missed the 2 s deadline
	perConnKB         int   // (peak RSS during the 1 MB load - RSS before it) / conns
	bigConns          int
	bigOK, bigFailed  int64
	bigHWMKB          int // peak RSS of a fresh Caddy taking bigConns 10 MB uploads at once
}

func pdfOf(size int) []byte {
	b := make([]byte, size)
	rand.Read(b)
	copy(b, "%PDF-1.7\n")
	return b
}

// uploadBody is one multipart post: a distinct name and the file.
func uploadBody(n int64, file []byte) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("name", fmt.Sprint("bench ", n))
	w, _ := mw.CreateFormFile("cv", "brief.pdf")
	w.Write(file)
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// errQueued is an upload the spool took (the store missed intake's deadline): answered,
// but not stored in this measure.
var errQueued = errors.New("queued in the spool")

func postUpload(client *http.Client, url string, n int64, file []byte) (time.Duration, error) {
	ct, body := uploadBody(n, file)
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	ans, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	if bytes.Contains(ans, []byte(`"status":"queued"`)) {
		return time.Since(start), errQueued
	}
	return time.Since(start), nil
}

// benchUploads measures intake of 1 MB uploads at 8 connections on PostgreSQL
// (throughput, p50/p99, memory per connection), then the peak RSS of a fresh Caddy
// taking 32 uploads of 10 MB at once.
func benchUploads(ctx context.Context, cfg *config, r *report) error {
	schema := "bench_uploads"
	if err := resetSchema(ctx, cfg.dsn, schema); err != nil {
		return err
	}
	defer dropSchema(context.Background(), cfg.dsn, schema)
	storage := fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", cfg.dsn, schema)
	res := &uploadsResult{conns: 8, bigConns: 32}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	p, err := startCaddyfile(cfg, "caddy-uploads", uploadsCaddyfile, strings.NewReplacer("{{STORAGE}}", storage))
	if err != nil {
		return err
	}
	small := pdfOf(1 << 20)
	client := &http.Client{Timeout: time.Minute, CheckRedirect: noRedirect,
		Transport: &http.Transport{MaxIdleConnsPerHost: res.conns}}
	var seq atomic.Int64
	for i := 0; i < 5; i++ { // warm-up: the store opens and migrates on first use
		if _, err := postUpload(client, p.url("/apply"), seq.Add(1), small); err != nil {
			p.stop()
			return fmt.Errorf("warm-up upload: %w", err)
		}
	}
	before, _ := rssKB(p.cmd.Process.Pid)
	var (
		mu   sync.Mutex
		lats []time.Duration
		wg   sync.WaitGroup
	)
	deadline := time.Now().Add(cfg.dur)
	start := time.Now()
	for c := 0; c < res.conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				d, err := postUpload(client, p.url("/apply"), seq.Add(1), small)
				mu.Lock()
				if errors.Is(err, errQueued) {
					res.queued++
				} else if err != nil {
					res.failed++
				} else {
					res.ok++
					lats = append(lats, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	_, hwm := rssKB(p.cmd.Process.Pid)
	p.stop()
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) > 0 {
		res.p50, res.p99 = lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)]
	}
	res.rate = float64(res.ok) / elapsed.Seconds()
	res.mbps = res.rate * float64(len(small)) / (1 << 20)
	res.perConnKB = max(hwm-before, 0) / res.conns
	logf("  uploads 1 MB  %d conns: %.1f/s (%.1f MB/s) p50 %v p99 %v, %d queued, %d failed, ~%d kB per connection",
		res.conns, res.rate, res.mbps, res.p50.Round(time.Millisecond), res.p99.Round(time.Millisecond), res.queued, res.failed, res.perConnKB)

	// A fresh process, so its VmHWM is this load's peak alone.
	big, err := startCaddyfile(cfg, "caddy-uploads-big", uploadsCaddyfile, strings.NewReplacer("{{STORAGE}}", storage))
	if err != nil {
		return err
	}
	defer big.stop()
	large := pdfOf(10 << 20)
	bigClient := &http.Client{Timeout: 5 * time.Minute, CheckRedirect: noRedirect,
		Transport: &http.Transport{MaxIdleConnsPerHost: res.bigConns}}
	if _, err := postUpload(bigClient, big.url("/apply"), seq.Add(1), small); err != nil {
		return fmt.Errorf("warm-up upload: %w", err)
	}
	var bwg sync.WaitGroup
	ready := make(chan struct{})
	for c := 0; c < res.bigConns; c++ {
		bwg.Add(1)
		go func() {
			defer bwg.Done()
			<-ready
			if _, err := postUpload(bigClient, big.url("/apply"), seq.Add(1), large); errors.Is(err, errQueued) {
				atomic.AddInt64(&res.bigQueued, 1)
			} else if err != nil {
				atomic.AddInt64(&res.bigFailed, 1)
			} else {
				atomic.AddInt64(&res.bigOK, 1)
			}
		}()
	}
	close(ready)
	bwg.Wait()
	_, res.bigHWMKB = rssKB(big.cmd.Process.Pid)
	logf("  uploads 10 MB %d at once: %d stored, %d queued, %d failed, Caddy peak RSS %.1f MB",
		res.bigConns, res.bigOK, res.bigQueued, res.bigFailed, float64(res.bigHWMKB)/1024)
	r.uploads = res
	return nil
}

// uploadsTargets adds the uploads part's target rows.
func (r *report) uploadsTargets(b *strings.Builder) {
	u := r.uploads
	if u == nil {
		return
	}
	fmt.Fprintf(b, "| Caddy RSS under %d concurrent 10 MB uploads (PostgreSQL) < 300 MB | VmHWM %.1f MB (%d stored, %d spooled, %d failed) | %s |\n",
		u.bigConns, float64(u.bigHWMKB)/1024, u.bigOK, u.bigQueued, u.bigFailed, verdict(u.bigHWMKB < 300*1024 && u.bigFailed == 0))
}

// uploadsSection writes the uploads part's figures.
func (r *report) uploadsSection(b *strings.Builder) {
	u := r.uploads
	if u == nil {
		return
	}
	b.WriteString("\n## Uploads\n\nA Caddy on PostgreSQL (`worker off`) taking multipart posts of one text field and one PDF (random bytes behind a `%PDF-` header), each stored with its file in the accept transaction; Go HTTP clients in a closed loop.\n\n| Measure | Value |\n|---|---|\n")
	fmt.Fprintf(b, "| 1 MB uploads, %d connections | %.1f/s stored (%.1f MB/s), p50 %s, p99 %s, %d spooled, %d failed |\n", u.conns, u.rate, u.mbps, ms(u.p50), ms(u.p99), u.queued, u.failed)
	fmt.Fprintf(b, "| Memory per connection during that load | ~%d kB (peak RSS minus RSS before, / %d) |\n", u.perConnKB, u.conns)
	fmt.Fprintf(b, "| %d concurrent 10 MB uploads | peak RSS %.1f MB, %d stored, %d spooled (the store missed the 2 s intake deadline), %d failed |\n", u.bigConns, float64(u.bigHWMKB)/1024, u.bigOK, u.bigQueued, u.bigFailed)
}
