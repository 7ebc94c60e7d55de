package storetest

import (
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// MigrationLevel: an opened store is migrated to the last migration its build knows,
// and says so (what `caddy form-outbox check` prints).
var _ = register("MigrationLevel", func(t *testing.T, s outbox.Store) {
	mr, ok := s.(outbox.MigrationReporter)
	if !ok {
		t.Fatalf("%T does not report its migration level", s)
	}
	lv, err := mr.MigrationLevel(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if lv.Known < 7 || lv.Applied != lv.Known {
		t.Fatalf("migration level %+v, want applied = known >= 7", lv)
	}
})
