package storetest

import (
	"encoding/json"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Submission.Events (schema.drift in monitor mode) are written with the submission, and
// not at all for a duplicate.
var _ = register("AcceptWritesSubmissionEvents", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("contact", WithIdempotencyKey("drift-1"))
	sub.Events = []outbox.Event{{Kind: outbox.EventSchemaDrift, Data: json.RawMessage(`{"form":"contact","fields":["phone"]}`)}}
	MustAccept(t, s, sub)

	events, err := s.ListEvents(ctx, outbox.EventSchemaDrift, 10)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	if len(events) != 1 || events[0].SubmissionID != sub.ID || !sub.CreatedAt.Equal(events[0].At) {
		t.Fatalf("schema.drift events = %+v, want one for %s at %s", events, sub.ID, sub.CreatedAt)
	}
	var data map[string]any
	if err := json.Unmarshal(events[0].Data, &data); err != nil || data["form"] != "contact" {
		t.Errorf("event data = %s (%v)", events[0].Data, err)
	}

	dup := NewSubmission("contact", WithIdempotencyKey("drift-1"))
	dup.Events = sub.Events
	if res := MustAccept(t, s, dup); !res.Duplicate {
		t.Fatalf("second accept with the same key: %+v, want duplicate", res)
	}
	if events, _ := s.ListEvents(ctx, outbox.EventSchemaDrift, 10); len(events) != 1 {
		t.Errorf("a duplicate wrote events: %d schema.drift events, want 1", len(events))
	}
})
