package storetest

import (
	"reflect"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// A submission's spam signals are kept with it (in its submission.received event) and
// read back by the inbox with their score; one without signals reads back none.
var _ = register("AcceptKeepsSpamSignals", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	ib := outbox.Inbox(s)
	signals := []outbox.Signal{
		{Name: "time_trap_too_fast", Weight: 4, Evidence: "posted 1.2s after the token was issued (minimum 3s)"},
		{Name: "altcha_passed", Weight: 0},
		{Name: "time_trap_missing", Weight: 1, Evidence: `no token ("quoted", <b>)`},
	}
	sub := NewSubmission("contact", WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSpamSuspected))
	sub.Signals = signals
	plain := NewSubmission("contact")
	MustAccept(t, s, sub)
	MustAccept(t, s, plain)

	for _, c := range []struct {
		sub     *outbox.Submission
		score   int
		signals []outbox.Signal
	}{{sub, 5, signals}, {plain, 0, nil}} {
		evs, err := ib.SubmissionEvents(ctx, c.sub.ID)
		if err != nil {
			t.Fatalf("submission events: %v", err)
		}
		if len(evs) == 0 || evs[0].Kind != outbox.EventSubmissionReceived {
			t.Fatalf("events of %s = %+v, want submission.received first", c.sub.ID, evs)
		}
		score, got, err := outbox.ReceivedSignals(evs[0].Data)
		if err != nil || score != c.score || !reflect.DeepEqual(got, c.signals) {
			t.Errorf("signals of %s = %d %+v (%v), want %d %+v", c.sub.ID, score, got, err, c.score, c.signals)
		}
	}
	got, err := s.GetSubmission(ctx, sub.ID)
	if err != nil || got.Status != outbox.SubmissionQuarantined || got.Reason != outbox.ReasonSpamSuspected {
		t.Errorf("stored %+v (%v), want quarantined/spam_suspected", got, err)
	}
})
