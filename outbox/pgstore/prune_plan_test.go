package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// A retention batch reads what it deletes, never a whole table: over a large finished
// history the batch's plan has no sequential scan (the query once scanned every
// delivery per batch, which made a first prune of 1,000,000 submissions take tens of
// minutes; bench/RESULTS.md, "Retention under load").
func TestPruneBatchPlanScansNoTable(t *testing.T) {
	s := storetest.OpenPostgresAt(t, storetest.NewPostgresSchema(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := s.Pool()
	// 20,000 old submissions with two sent deliveries each, and a few young ones still
	// due, as a production table holds.
	for _, q := range []string{
		`INSERT INTO submissions (id, form, status, data, meta, created_at)
		SELECT gen_random_uuid(), 'contact', 'accepted', '{}', '{}', now() - interval '800 days' + i * interval '1 minute'
		FROM generate_series(1, 20000) i`,
		`INSERT INTO submissions (id, form, status, data, meta, created_at)
		SELECT gen_random_uuid(), 'contact', 'accepted', '{}', '{}', now() FROM generate_series(1, 50)`,
		`INSERT INTO deliveries (id, submission_id, route, channel, recipient, status, next_attempt_at, payload, created_at, updated_at)
		SELECT gen_random_uuid(), s.id, 'webhook', 'webhook', r, CASE WHEN s.created_at < now() - interval '1 day' THEN 'sent' ELSE 'pending' END,
			s.created_at, '{}', s.created_at, s.created_at
		FROM submissions s, (VALUES ('http://a'), ('http://b')) v(r)`,
		`ANALYZE submissions, deliveries`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", strings.Fields(q)[0], err)
		}
	}
	var plan strings.Builder
	rows, err := pool.Query(ctx, "EXPLAIN "+pgstore.PruneSubmissionsSQL(), time.Now().Add(-365*24*time.Hour), 500)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.String(), "Seq Scan") {
		t.Errorf("the prune batch scans a whole table:\n%s", plan.String())
	}
}
