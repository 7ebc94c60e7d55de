package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

func migrationVersions(t *testing.T, cfg pgstore.Config) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT version FROM `+pgx.Identifier{cfg.Schema, "form_outbox_migrations"}.Sanitize()+` ORDER BY version`)
	if err != nil {
		t.Fatalf("read migrations table: %v", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestReopenIsIdempotentAndKeepsData(t *testing.T) {
	ctx := context.Background()
	cfg := storetest.NewPostgresSchema(t)
	s, err := pgstore.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	sub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
	s.Close()
	for range 2 {
		s := storetest.OpenPostgresAt(t, cfg)
		if _, err := s.GetSubmission(ctx, sub.ID); err != nil {
			t.Fatalf("submission lost across reopen: %v", err)
		}
	}
	if vs, want := migrationVersions(t, cfg), pgstore.MigrationVersions(); fmt.Sprint(vs) != fmt.Sprint(want) {
		t.Errorf("recorded migrations = %v, want %v, each once", vs, want)
	}
}

func TestConcurrentOpensOnAFreshSchemaAllSucceed(t *testing.T) {
	// The schema does not exist yet: every Open races to create it and migrate.
	cfg := storetest.NewPostgresSchemaName(t)
	const n = 6
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = pgstore.Open(context.Background(), cfg)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("open %d: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	// Every store works on the same tables.
	sub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, stores[0], sub)
	if _, err := stores[n-1].GetSubmission(context.Background(), sub.ID); err != nil {
		t.Errorf("submission written through one store not visible through another: %v", err)
	}
	if vs, want := migrationVersions(t, cfg), pgstore.MigrationVersions(); fmt.Sprint(vs) != fmt.Sprint(want) {
		t.Errorf("recorded migrations = %v, want %v, each once", vs, want)
	}
}

func TestSchemasAreIsolated(t *testing.T) {
	ctx := context.Background()
	a := storetest.OpenPostgres(t)
	b := storetest.OpenPostgres(t)
	sub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, a, sub)
	if _, err := b.GetSubmission(ctx, sub.ID); err == nil {
		t.Errorf("submission stored in one schema is visible in another")
	}
}

func TestUpgradeReleasesRefusedKeys(t *testing.T) {
	ctx := context.Background()
	cfg := storetest.NewPostgresSchema(t)
	storetest.CheckUpgradeReleasesRefusedKeys(t, func() outbox.Store {
		s, err := pgstore.Open(ctx, cfg)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}, func(stmts []string) {
		conn, err := pgx.Connect(ctx, cfg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, q := range stmts {
			if _, err := conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{cfg.Schema}.Sanitize()+`; `+q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
}
