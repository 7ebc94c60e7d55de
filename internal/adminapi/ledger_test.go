package adminapi

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// GET ledger answers the rows' numbers per form and day, filtered by form, and refuses a
// length it would not read.
func TestLedgerRouteCountsTheRows(t *testing.T) {
	st := openStore(t)
	s := NewServer(func() Backend { return &testBackend{store: st} })
	ctx := context.Background()
	for _, sub := range []*outbox.Submission{
		storetest.NewSubmission("contact"),
		storetest.NewSubmission("contact"),
		storetest.NewSubmission("contact", storetest.WithStatus(outbox.SubmissionSpam, outbox.ReasonHoneypot)),
		storetest.NewSubmission("jobs"),
	} {
		if _, err := outbox.AcceptOne(ctx, st, sub, []outbox.Delivery{storetest.NewDelivery(sub, "team", "team@example.com")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordLedger(ctx, "host-a", []outbox.LedgerCount{{Day: outbox.UTCDay(time.Now()), Form: "contact", Answered: 3}}, time.Now()); err != nil {
		t.Fatal(err)
	}

	w, re := call(t, s, "GET", "/form_outbox/ledger?form=contact&days=2", "")
	var got Ledger
	if re != nil || json.Unmarshal(w.Body.Bytes(), &got) != nil {
		t.Fatalf("ledger = %+v %s", re, w.Body)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if len(got.Days) != 1 || got.Mismatches != 0 || got.Until != time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly) {
		t.Fatalf("ledger body %s, want one line for contact today", w.Body)
	}
	d := got.Days[0]
	if d.Day != today || d.Form != "contact" || d.Answered != 3 || d.Accepted != 2 || d.Spam != 1 ||
		d.Pending != 2 || d.Skipped != 1 || len(d.Routes) != 1 || d.Routes[0].Route != "team" || d.Routes[0].Pending != 2 {
		t.Errorf("contact's line = %+v", d)
	}
	for _, bad := range []string{"0", "367", "x"} {
		if _, re := call(t, s, "GET", "/form_outbox/ledger?days="+bad, ""); re == nil || re.Status != 400 {
			t.Errorf("days=%s: %+v, want 400", bad, re)
		}
	}
}
