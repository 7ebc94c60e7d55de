package pgstore_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// closedAddr is a loopback address nothing listens on any more.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestLazyOpenSucceedsWhileTheServerIsDown(t *testing.T) {
	addr := closedAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, pgstore.Config{DSN: "postgres://u@" + addr + "/db?sslmode=disable&connect_timeout=2", Lazy: true})
	if err != nil {
		t.Fatalf("lazy open with the server down: %v", err)
	}
	defer s.Close()
	sub := storetest.NewSubmission("contact")
	if _, err := outbox.AcceptOne(ctx, s, sub, nil); err == nil {
		t.Fatal("accept succeeded with no server")
	}
}

func TestLazyOpenMigratesOnFirstUse(t *testing.T) {
	cfg := storetest.NewPostgresSchemaName(t) // the schema does not exist yet
	cfg.Lazy = true
	ctx := context.Background()
	s, err := pgstore.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sub := storetest.NewSubmission("contact")
	storetest.MustAccept(t, s, sub, storetest.NewDelivery(sub, "email", "sales@example.com"))
	if _, err := s.GetSubmission(ctx, sub.ID); err != nil {
		t.Fatalf("read back: %v", err)
	}
	if vs := migrationVersions(t, cfg); len(vs) == 0 {
		t.Fatal("no migration recorded")
	}
}
