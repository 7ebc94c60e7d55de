package storetest_test

import (
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestConformance is where both stores prove the contract; the driver packages test
// only what is specific to them (migrations, files, LISTEN/NOTIFY). Both stores run side
// by side and every case in parallel; PostgreSQL cases borrow their schemas from one
// pool, dropped when this test ends.
func TestConformance(t *testing.T) {
	openers := map[string]func(testing.TB) outbox.Store{
		"sqlite":   storetest.OpenSQLite,
		"postgres": storetest.NewPostgresPool(t).Open,
	}
	for name := range storetest.Stores() {
		open := openers[name]
		if open == nil {
			t.Fatalf("store %q from storetest.Stores has no opener here: add one", name)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, open)
		})
	}
}
