package storetest_test

import (
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// TestConformance is where both stores prove the contract; the driver packages test
// only what is specific to them (migrations, files, LISTEN/NOTIFY).
func TestConformance(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) { storetest.Run(t, open) })
	}
}
