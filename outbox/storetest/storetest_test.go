package storetest_test

import (
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

func TestConformance(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) { storetest.Run(t, open) })
	}
}
