package chain_test

import (
	"context"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chain"
	"github.com/formoutbox/caddy-form-outbox/providers/fake"
)

// TestDestinationFailureIsTheWholeChains checks what parks e-mail: an account refusal
// (Permanent, Destination) fails over to the next provider, and the chain's error is the
// destination's only when every provider tried refused as a destination.
func TestDestinationFailureIsTheWholeChains(t *testing.T) {
	revoked := &providers.Error{Class: providers.Permanent, Destination: true, Failover: true, HTTPStatus: 403, Code: "revoked"}
	bounce := &providers.Error{Class: providers.Permanent, HTTPStatus: 422, Code: "bad_recipient"}
	for _, tc := range []struct {
		name            string
		first, second   error
		wantErr         bool
		wantDestination bool
		wantSecondCalls int
	}{
		{"first revoked, second sends", revoked, nil, false, false, 1},
		{"both revoked", revoked, revoked, true, true, 1},
		{"first revoked, second bounces the recipient", revoked, bounce, true, false, 1},
		{"first bounces the recipient: no failover", bounce, nil, true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fake.New("a"), fake.New("b")
			a.Fail(func(providers.Message) error { return tc.first })
			b.Fail(func(providers.Message) error { return tc.second })
			_, err := chain.New(a, b).Send(context.Background(), providers.Message{ID: "m1", Channel: "email", To: "x@example.com"})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && providers.Classify(err).Destination != tc.wantDestination {
				t.Errorf("destination %v, want %v (%v)", providers.Classify(err).Destination, tc.wantDestination, err)
			}
			if got := b.Calls("m1"); got != tc.wantSecondCalls {
				t.Errorf("second provider called %d times, want %d", got, tc.wantSecondCalls)
			}
		})
	}
}
