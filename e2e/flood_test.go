package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The form allows one post per client per 10 minutes, remembers at most 1,000 clients
// and stores at most 50 rate_limited rows per window. Caddy trusts X-Forwarded-For from
// loopback only, so the test can be 5,000 clients from one machine.
const floodCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	servers {
		trusted_proxies static 127.0.0.1/32
	}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field name required
		field email required email
		allowed_origins http://127.0.0.1:{{HTTP}}
		rate_limit 1 10m {
			max_clients 1000
			max_stored 50
		}
		store_only
	}
	respond "site"
}
`

const (
	floodClients   = 5000
	floodPerClient = 4 // 20,000 flood requests
	legitPosts     = 100
	floodMaxStored = 50
	// floodMaxRSSGrowthMB is generous for a Go server under 32 concurrent connections,
	// and far below what 5,000 remembered clients or 20,000 kept requests would cost
	// if the limiter or the dedupe memory were unbounded.
	floodMaxRSSGrowthMB = 64
)

// TestFloodFromManyClients sends 20,000 posts from 5,000 addresses (four each, in
// quick succession) with 100 legitimate posts from other addresses in between, to a
// running Caddy. Every flood client's first post is within its limit and is stored; the
// other 15,000 are answered 429, of which at most max_stored are kept as quarantined.
// Memory stays bounded and every legitimate post is stored accepted.
func TestFloodFromManyClients(t *testing.T) {
	t.Parallel()
	p := newCaddy(t, caddyOpts{Caddyfile: floodCaddyfile})
	origin := strings.TrimSuffix(p.URL(""), "/")
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(ip, name, marker string) (int, error) {
		body := url.Values{"name": {name}, "email": {"x@example.com"}, "message": {marker}}.Encode()
		req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Origin", origin)
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var b [512]byte
		for {
			if _, err := resp.Body.Read(b[:]); err != nil {
				break
			}
		}
		return resp.StatusCode, nil
	}
	// Warm up, then take the baseline.
	for i := range 20 {
		if code, err := post(fmt.Sprintf("10.250.0.%d", i), "Warm", "warm"); err != nil || code != 200 {
			t.Fatalf("warm-up post: %d %v", code, err)
		}
	}
	rssBefore := procStatusKB(t, p, "VmRSS")

	type job struct{ ip, name, marker string }
	jobs := make(chan []job)
	var ok200, limited, other atomic.Int64
	var legitFailed sync.Map
	var wg sync.WaitGroup
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				for _, j := range batch {
					code, err := post(j.ip, j.name, j.marker)
					switch {
					case j.name == "Legit":
						if code != 200 {
							legitFailed.Store(j.marker, fmt.Sprint(code, err))
						}
					case code == 200:
						ok200.Add(1)
					case code == 429:
						limited.Add(1)
					default:
						other.Add(1)
					}
				}
			}
		}()
	}
	for i := range floodClients {
		ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
		batch := make([]job, 0, floodPerClient+1)
		for k := range floodPerClient {
			batch = append(batch, job{ip, "Flood", fmt.Sprintf("flood-%d-%d", i, k)})
		}
		if i%(floodClients/legitPosts) == 0 {
			n := i / (floodClients / legitPosts)
			batch = append(batch, job{fmt.Sprintf("172.16.%d.%d", n/256, n%256), "Legit", fmt.Sprintf("legit-%d", n)})
		}
		select {
		case jobs <- batch:
		case <-ctx.Done():
			t.Fatalf("flood did not finish within 90s (%d clients sent)", i)
		}
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	rssAfter := procStatusKB(t, p, "VmRSS")
	t.Logf("flood: %s, %d ok, %d 429, %d other; RSS %d -> %d kB", took, ok200.Load(), limited.Load(), other.Load(), rssBefore, rssAfter)

	legitFailed.Range(func(k, v any) bool {
		t.Errorf("legitimate post %s answered %s", k, v)
		return true
	})
	if ok200.Load() != floodClients || limited.Load() != floodClients*(floodPerClient-1) || other.Load() != 0 {
		t.Errorf("flood answers: %d ok, %d 429, %d other; want %d ok and %d 429",
			ok200.Load(), limited.Load(), other.Load(), floodClients, floodClients*(floodPerClient-1))
	}
	if growth := float64(rssAfter-rssBefore) / 1024; growth > floodMaxRSSGrowthMB {
		t.Errorf("RSS grew %.1f MB under the flood, want at most %d MB", growth, floodMaxRSSGrowthMB)
	}

	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))
	var limitedRows, floodAccepted, legitAccepted, total int
	for q, dst := range map[string]*int{
		`SELECT count(*) FROM submissions WHERE status = 'quarantined' AND reason = 'rate_limited'`: &limitedRows,
		`SELECT count(*) FROM submissions WHERE status = 'accepted' AND data LIKE '%"Flood"%'`:      &floodAccepted,
		`SELECT count(*) FROM submissions WHERE status = 'accepted' AND data LIKE '%"Legit"%'`:      &legitAccepted,
		`SELECT count(*) FROM submissions`: &total,
	} {
		if err := db.QueryRow(q).Scan(dst); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if limitedRows == 0 || limitedRows > floodMaxStored {
		t.Errorf("%d rate_limited rows stored, want between 1 and the cap %d", limitedRows, floodMaxStored)
	}
	if legitAccepted != legitPosts {
		t.Errorf("%d legitimate posts stored accepted, want %d", legitAccepted, legitPosts)
	}
	if floodAccepted != floodClients || total != 20+floodClients+legitPosts+limitedRows {
		t.Errorf("stored %d rows (%d flood accepted): want exactly warm-up + first posts + legitimate + capped quarantine", total, floodAccepted)
	}
}
