package pgstore_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// A store that cannot connect says why in an operator's terms, naming the server and
// database it tried and never the password of the DSN.
func TestExplainNamesTheCause(t *testing.T) {
	closed := closedAddr(t)
	missingDB, err := url.Parse(storetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	missingDB.Path = "/form_outbox_no_such_database"
	missingDB.User = url.UserPassword(missingDB.User.Username(), "hunter2-secret")

	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"wrong port", "postgres://u:hunter2-secret@" + closed + "/db?sslmode=disable&connect_timeout=2",
			"connection refused at " + closed + ": is PostgreSQL running there, and are the host and port right?"},
		{"missing database", missingDB.String(),
			`database "form_outbox_no_such_database" does not exist on ` + missingDB.Host},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := pgstore.Open(ctx, pgstore.Config{DSN: tc.dsn, Lazy: true})
			if err != nil {
				t.Fatalf("lazy open: %v", err)
			}
			defer s.Close()
			perr := s.Ping(ctx)
			if perr == nil {
				t.Fatal("ping succeeded")
			}
			got := s.Explain(perr)
			if got != tc.want {
				t.Errorf("Explain(%v) = %q, want %q", perr, got, tc.want)
			}
			if strings.Contains(got, "hunter2") {
				t.Errorf("the explanation shows the password: %q", got)
			}
		})
	}
	if got := (&pgstore.Store{}).Explain(context.Canceled); got != "" {
		t.Errorf("Explain(context.Canceled) = %q, want \"\" for an error not about connecting", got)
	}
}
