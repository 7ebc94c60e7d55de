package main

import (
	"context"
	"database/sql"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/inbox"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
)

// The inbox part seeds a large outbox into each store and times the operator's list
// pages through the real inbox handler (inbox.Handler.Serve, the call inbox_handler.go
// makes after authenticating the operator), so a figure is what the operator waits for
// minus the network: the store's queries and the page's rendering.
//
// The seed is a year of traffic on four forms: contact (50%), newsletter (25%), quote
// (15%) and support (10%), each with 3 to 5 fields; 90% accepted, 7% spam, 3%
// quarantined; two deliveries each (email and webhook), sent for accepted submissions
// except 1% with a dead one and 0.5% with a pending one, skipped for the others.
// searchWord is in the message of one submission in 1000, in mixed case.
const (
	searchWord  = "zanzibar"
	inboxDepth  = 100 // pages followed for the deep page
	inboxWarmup = 5
	seedChunk   = 100_000
)

// inboxPoint is one measured page on one store.
type inboxPoint struct {
	store, page string
	rows        int // submissions in the store
	p50, p99    time.Duration
	n           int
}

// inboxPages are the pages measured, in the report's order.
var inboxPages = []struct{ name, what string }{
	{"first", "first list page (50)"},
	{"deep", fmt.Sprintf("list page %d (keyset cursor followed from the first)", inboxDepth+1)},
	{"filtered", "list filtered by form and status (contact, spam), first page"},
	{"search", fmt.Sprintf("search for a word in 0.1%% of rows (%q), first page", searchWord)},
}

func benchInbox(ctx context.Context, cfg *config, r *report) error {
	for _, st := range []string{"sqlite", "pg"} {
		for _, n := range []int{cfg.inboxN, cfg.searchN} {
			pages := []string{"first", "deep", "filtered"}
			if n == cfg.searchN {
				pages = []string{"search"}
			}
			pts, err := inboxStore(ctx, cfg, st, n, pages)
			if err != nil {
				return fmt.Errorf("%s, %d submissions: %w", st, n, err)
			}
			r.inbox = append(r.inbox, pts...)
		}
	}
	return nil
}

// inboxStore seeds n submissions into a fresh store of kind st and times pages on it.
func inboxStore(ctx context.Context, cfg *config, st string, n int, pages []string) ([]inboxPoint, error) {
	var store outbox.Store
	start := time.Now()
	switch st {
	case "sqlite":
		path := filepath.Join(cfg.tmp, fmt.Sprintf("inbox-%d.db", n))
		// Open first, so the tables and indexes are the store's migrations, then seed
		// beside it and open again for the measurements.
		s, err := sqlitestore.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		s.Close()
		if err := seedSQLite(ctx, path, n); err != nil {
			return nil, err
		}
		if s, err = sqlitestore.Open(ctx, path); err != nil {
			return nil, err
		}
		defer s.Close()
		store = s
	case "pg":
		schema := fmt.Sprintf("bench_inbox_%d", n)
		_ = dropSchema(ctx, cfg.dsn, schema)
		defer dropSchema(context.Background(), cfg.dsn, schema)
		s, err := pgstore.Open(ctx, pgstore.Config{DSN: cfg.dsn, Schema: schema})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		if err := seedPG(ctx, cfg.dsn, schema, n); err != nil {
			return nil, err
		}
		store = s
	}
	logf("inbox: seeded %d submissions into %s in %v", n, st, time.Since(start).Round(time.Second))
	h, err := inbox.New(inbox.Config{Store: store, BasePath: "/inbox"})
	if err != nil {
		return nil, err
	}
	var out []inboxPoint
	for _, page := range pages {
		url := "/inbox/submissions"
		switch page {
		case "deep":
			for range inboxDepth {
				body, err := servePage(h, url, 50)
				if err != nil {
					return nil, fmt.Errorf("follow the cursor: %w", err)
				}
				if url = nextURL(body); url == "" {
					return nil, fmt.Errorf("follow the cursor: no next page after %s", url)
				}
			}
		case "filtered":
			url += "?form=contact&status=spam"
		case "search":
			url += "?q=" + searchWord
		}
		want := 50
		if page == "search" {
			want = min(50, n/1000) // the quick run's store has fewer matches than a page
		}
		var lats []time.Duration
		for k := range cfg.inboxReqs + inboxWarmup {
			t0 := time.Now()
			body, err := servePage(h, url, want)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", page, err)
			}
			if k >= inboxWarmup {
				lats = append(lats, time.Since(t0))
			}
			if page == "search" && strings.Count(strings.ToLower(body), searchWord) < want {
				return nil, fmt.Errorf("search: the page does not show %d submissions with %q", want, searchWord)
			}
		}
		p50, p99 := percentiles(lats)
		logf("  inbox %-6s %7d rows %-8s p50 %v p99 %v", st, n, page, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
		out = append(out, inboxPoint{store: st, page: page, rows: n, p50: p50, p99: p99, n: len(lats)})
	}
	return out, nil
}

// servePage answers one GET as the handler would behind Caddy's authentication and
// checks it is a page of want submissions.
func servePage(h *inbox.Handler, url string, want int) (string, error) {
	rec := httptest.NewRecorder()
	h.Serve(rec, httptest.NewRequest(http.MethodGet, url, nil), "bench")
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", url, rec.Code, lastLines([]byte(body), 5))
	}
	if got := strings.Count(body, `class="row"`); got != want {
		return "", fmt.Errorf("GET %s: %d submissions on the page, want %d", url, got, want)
	}
	return body, nil
}

var nextRE = regexp.MustCompile(`class="pager"><a class="button" href="([^"]+)"`)

// nextURL is the page's "Older submissions" link, as the operator's browser follows it.
func nextURL(body string) string {
	m := nextRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// The seed's columns, as SQL expressions of the row number i (1..n, oldest first),
// written once for both dialects: only the array literal and the uuid/time casts differ.
// r spreads the statuses independently of the form (i % 20).
const (
	seedForm = `CASE WHEN i % 20 < 10 THEN 'contact' WHEN i % 20 < 15 THEN 'newsletter' WHEN i % 20 < 18 THEN 'quote' ELSE 'support' END`
	seedR    = `((i * 7919) % 100)`
)

var (
	seedStatus = `CASE WHEN ` + seedR + ` < 90 THEN 'accepted' WHEN ` + seedR + ` < 97 THEN 'spam' ELSE 'quarantined' END`
	seedReason = `CASE WHEN ` + seedR + ` < 90 THEN '' WHEN ` + seedR + ` < 97 THEN 'honeypot' ELSE 'rate_limit' END`
	// The first delivery (email) of 1% of accepted submissions is dead, of 0.5% pending.
	seedEmail = `CASE WHEN ` + seedR + ` >= 90 THEN 'skipped' WHEN i % 100 = 3 THEN 'dead' WHEN i % 200 = 5 THEN 'pending' ELSE 'sent' END`
	seedHook  = `CASE WHEN ` + seedR + ` >= 90 THEN 'skipped' ELSE 'sent' END`
)

// seedData is the submission's fields as a JSON object, in SQL both dialects share;
// word(list, k) is the dialect's pick of entry k (from 0) of a list of string literals.
func seedData(word func(list string, k string) string) string {
	first := word(`"Ada","Grace","Linus","Barbara","Ken","Margaret","Dennis","Frances"`, "i % 8")
	last := word(`"Lovelace","Hopper","Torvalds","Liskov","Thompson","Hamilton","Ritchie","Allen"`, "(i / 8) % 8")
	topic := word(`"pricing","delivery","an invoice","the warranty","a refund","opening hours","our order","the API"`, "(i / 3) % 8")
	when := word(`"next week","tomorrow","this month","before Friday","in spring","soon"`, "(i / 5) % 6")
	msg := `'Hello, I have a question about ' || ` + topic + ` || ', could you call me back ' || ` + when +
		` || '?' || CASE WHEN i % 1000 = 17 THEN ' We are in Zanzibar until then.' ELSE ' Thanks in advance.' END`
	name := first + ` || ' ' || ` + last
	email := `lower(` + first + `) || '.' || i || '@example.com'`
	// newsletter: 3 fields; contact: 4; quote and support: 5.
	return `'{"name":"' || ` + name + ` || '","email":"' || ` + email + ` || '"' ||
		CASE WHEN i % 20 >= 10 AND i % 20 < 15 THEN ',"list":"weekly"}' ELSE
			',"message":"' || ` + msg + ` || '"' ||
			CASE WHEN i % 20 < 10 THEN '}' ELSE ',"phone":"+44 20 7946 ' || (1000 + i % 9000) || '","company":"' || ` + last + ` || ' Ltd"}' END
		END`
}

// seedSQLite fills the store's file with n submissions, seedChunk per transaction, from a
// recursive series: no round trip per row.
func seedSQLite(ctx context.Context, path string, n int) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=synchronous(OFF)&_pragma=foreign_keys(OFF)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	word := func(list, k string) string { return `json_extract('[` + list + `]', '$[' || (` + k + `) || ']')` }
	id := func(kind string) string { return `printf('00000000-0000-7000-8` + kind + `-%012x', i)` }
	now := time.Now().UnixMicro()
	// A year of traffic, evenly spread, the newest a minute ago.
	step := int64(365*24*time.Hour/time.Microsecond) / int64(n)
	created := fmt.Sprintf("(%d - (%d - i) * %d)", now-int64(time.Minute/time.Microsecond), n, step)
	series := `WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?2) `
	subs := series + `INSERT INTO submissions (id, form, status, reason, data, meta, content_hash, created_at)
		SELECT ` + id("000") + `, ` + seedForm + `, ` + seedStatus + `, ` + seedReason + `, ` + seedData(word) + `,
			'{"origin":"https://example.com","ip_hash":"' || printf('%016x', i * 2654435761) || '"}', '', ` + created + ` FROM s`
	dels := series + `INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, attempts, max_attempts,
			next_attempt_at, last_error, payload, created_at, updated_at, sent_at)
		SELECT ` + id("001") + `, ` + id("000") + `, 'email', 'email', 'owner@example.com', ` + seedEmail + `,
			CASE WHEN ` + seedEmail + ` = 'dead' THEN 8 ELSE 1 END, 8, ` + created + `,
			CASE WHEN ` + seedEmail + ` = 'dead' THEN 'smtp: 550 mailbox unavailable' ELSE '' END,
			'{}', ` + created + `, ` + created + `, CASE WHEN ` + seedEmail + ` = 'sent' THEN ` + created + ` END FROM s
		UNION ALL
		SELECT ` + id("002") + `, ` + id("000") + `, 'crm', 'webhook', 'https://crm.example.com/hook', ` + seedHook + `,
			1, 8, ` + created + `, '', '{}', ` + created + `, ` + created + `, CASE WHEN ` + seedHook + ` = 'sent' THEN ` + created + ` END FROM s`
	for lo := 1; lo <= n; lo += seedChunk {
		hi := min(lo+seedChunk-1, n)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, q := range []string{subs, dels} {
			if _, err := tx.ExecContext(ctx, q, lo, hi); err != nil {
				tx.Rollback()
				return fmt.Errorf("seed sqlite rows %d-%d: %w", lo, hi, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// seedPG fills the store's schema with n submissions from generate_series, seedChunk
// per statement, then VACUUM ANALYZE as autovacuum would after such a load.
func seedPG(ctx context.Context, dsn, schema string, n int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()+`; SET synchronous_commit = off`); err != nil {
		return err
	}
	word := func(list, k string) string {
		return `(ARRAY[` + strings.ReplaceAll(list, `"`, `'`) + `])[1 + (` + k + `)]`
	}
	id := func(kind string) string {
		return `('00000000-0000-7000-8` + kind + `-' || lpad(to_hex(i), 12, '0'))::uuid`
	}
	created := fmt.Sprintf("(now() - interval '1 minute' - (%d - i) * interval '%d microseconds')", n,
		int64(365*24*time.Hour/time.Microsecond)/int64(n))
	subs := `INSERT INTO submissions (id, form, status, reason, data, meta, content_hash, created_at)
		SELECT ` + id("000") + `, ` + seedForm + `, ` + seedStatus + `, ` + seedReason + `, (` + seedData(word) + `)::json,
			('{"origin":"https://example.com","ip_hash":"' || to_hex(i * 2654435761) || '"}')::json, '', ` + created + `
		FROM generate_series($1::bigint, $2::bigint) i`
	dels := `INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, attempts, max_attempts,
			next_attempt_at, last_error, payload, created_at, updated_at, sent_at)
		SELECT ` + id("001") + `, ` + id("000") + `, 'email', 'email', 'owner@example.com', ` + seedEmail + `,
			CASE WHEN ` + seedEmail + ` = 'dead' THEN 8 ELSE 1 END, 8, ` + created + `,
			CASE WHEN ` + seedEmail + ` = 'dead' THEN 'smtp: 550 mailbox unavailable' ELSE '' END,
			'{}'::json, ` + created + `, ` + created + `, CASE WHEN ` + seedEmail + ` = 'sent' THEN ` + created + ` END
		FROM generate_series($1::bigint, $2::bigint) i
		UNION ALL
		SELECT ` + id("002") + `, ` + id("000") + `, 'crm', 'webhook', 'https://crm.example.com/hook', ` + seedHook + `,
			1, 8, ` + created + `, '', '{}'::json, ` + created + `, ` + created + `, CASE WHEN ` + seedHook + ` = 'sent' THEN ` + created + ` END
		FROM generate_series($1::bigint, $2::bigint) i`
	for lo := 1; lo <= n; lo += seedChunk {
		hi := min(lo+seedChunk-1, n)
		for _, q := range []string{subs, dels} {
			if _, err := conn.Exec(ctx, q, lo, hi); err != nil {
				return fmt.Errorf("seed pg rows %d-%d: %w", lo, hi, err)
			}
		}
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE submissions, deliveries`)
	return err
}
