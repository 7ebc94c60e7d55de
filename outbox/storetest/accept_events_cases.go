package storetest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

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

// A submission quarantined for a schema violation keeps the fields that failed: its
// schema.violation event is written with it and read back, in order, by the inbox's
// SubmissionEvents, also after an operator released it.
var _ = register("AcceptKeepsSchemaViolationFields", func(t *testing.T, s outbox.Store) {
	ib := outbox.Inbox(s)
	want := outbox.SchemaViolationData{Form: "contact", Errors: []outbox.FieldError{
		{Field: "name", Message: "name is required"},
		{Field: "email", Message: "email must be a valid email address"},
	}}
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	sub := NewSubmission("contact", WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	sub.Events = []outbox.Event{{Kind: outbox.EventSchemaViolation, Data: data}}
	MustAccept(t, s, sub)
	if err := ib.Act(testCtx(t), outbox.Action{Kind: outbox.ActionRelease, SubmissionID: sub.ID, User: "ops",
		Now: sub.CreatedAt.Add(time.Minute)}); err != nil {
		t.Fatalf("release: %v", err)
	}

	evs, err := ib.SubmissionEvents(testCtx(t), sub.ID)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var kinds []string
	var got outbox.SchemaViolationData
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		if e.Kind == outbox.EventSchemaViolation {
			if err := json.Unmarshal(e.Data, &got); err != nil {
				t.Fatalf("schema.violation data %s: %v", e.Data, err)
			}
		}
	}
	if !reflect.DeepEqual(kinds, []string{outbox.EventSubmissionReceived, outbox.EventSchemaViolation, outbox.EventSubmissionReleased}) {
		t.Fatalf("events = %v, want received, schema.violation, released", kinds)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema.violation data = %+v, want %+v", got, want)
	}
})

// An extra event about one of the submission's deliveries (template.empty) keeps its
// delivery id; one about the submission only has none.
var _ = register("AcceptWritesEventDeliveryIDs", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("contact")
	d := NewDelivery(sub, "email", "sales@example.com")
	sub.Events = []outbox.Event{
		{Kind: outbox.EventTemplateEmpty, DeliveryID: d.ID, Data: json.RawMessage(`{"form":"contact","field":"name"}`)},
		{Kind: outbox.EventSchemaDrift, Data: json.RawMessage(`{"form":"contact"}`)},
	}
	MustAccept(t, s, sub, d)
	empty, err := s.ListEvents(ctx, outbox.EventTemplateEmpty, 10)
	if err != nil || len(empty) != 1 || empty[0].DeliveryID != d.ID || empty[0].SubmissionID != sub.ID {
		t.Fatalf("template.empty events %+v (%v), want one for delivery %s", empty, err, d.ID)
	}
	drift, err := s.ListEvents(ctx, outbox.EventSchemaDrift, 10)
	if err != nil || len(drift) != 1 || drift[0].DeliveryID != uuid.Nil {
		t.Fatalf("schema.drift events %+v (%v), want one without a delivery", drift, err)
	}
})
