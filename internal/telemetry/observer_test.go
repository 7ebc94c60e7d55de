package telemetry

import (
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

type event struct {
	name string
	data map[string]any
}

// submitted is form_outbox_submissions_total{form, status} as a scrape reads it.
func submitted(t *testing.T, form string, status outbox.SubmissionStatus) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "form_outbox_submissions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["form"] == form && labels["status"] == string(status) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A stored submission is counted and announced with ids and statuses only; a post whose
// key was reused is announced under the reason it was stored with; a duplicate answer
// stored nothing and is neither counted nor announced.
func TestStoredCountsAndAnnounces(t *testing.T) {
	var got []event
	o := Observer{Emit: func(name string, data map[string]any) { got = append(got, event{name, data}) }}
	form := "telemetry-test-" + uuid.NewString()
	sub := &outbox.Submission{Form: form, Reason: "", Data: outbox.Fields{{Name: "email", Value: "visitor@example.com"}}}
	id := uuid.New()

	o.Stored(sub, outbox.AcceptResult{ID: id, Status: outbox.SubmissionAccepted, Duplicate: true})
	if len(got) != 0 || submitted(t, form, outbox.SubmissionAccepted) != 0 {
		t.Fatalf("a duplicate was announced (%v) or counted", got)
	}

	o.Stored(sub, outbox.AcceptResult{ID: id, Status: outbox.SubmissionQuarantined, KeyReused: true})
	if n := submitted(t, form, outbox.SubmissionQuarantined); n != 1 {
		t.Errorf("counted %v quarantined submissions, want 1", n)
	}
	if len(got) != 1 || got[0].name != EventSubmissionReceived {
		t.Fatalf("events %v, want one %s", got, EventSubmissionReceived)
	}
	want := map[string]any{"submission_id": id.String(), "form": form, "status": "quarantined", "reason": outbox.ReasonIdempotencyKeyReused}
	if len(got[0].data) != len(want) {
		t.Errorf("event data %v, want exactly %v", got[0].data, want)
	}
	for k, v := range want {
		if got[0].data[k] != v {
			t.Errorf("event %s = %v, want %v", k, got[0].data[k], v)
		}
	}

	// Without an events app the counters still count.
	Observer{}.Stored(sub, outbox.AcceptResult{ID: uuid.New(), Status: outbox.SubmissionQuarantined})
	if n := submitted(t, form, outbox.SubmissionQuarantined); n != 2 {
		t.Errorf("counted %v quarantined submissions without events, want 2", n)
	}
}
