package inbox

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func (f *fixture) openAlert(kind, key, form, summary string, affected int) {
	f.t.Helper()
	a := outbox.Alert{ID: uuid.Must(uuid.NewV7()), Kind: kind, Key: key, Form: form, Summary: summary, Affected: affected, OpenedAt: now}
	if ok, err := f.store.RecordAlert(context.Background(), outbox.AlertNotice{Notice: outbox.AlertOpened, Alert: a, Now: now}); !ok || err != nil {
		f.t.Fatalf("open alert: %v %v", ok, err)
	}
}

// Every page shows the open alerts of the inbox's forms as a banner, with the dead
// deliveries' list one link away; an alert of a form the inbox does not show is not.
func TestOpenAlertsShowAsABanner(t *testing.T) {
	f := newFixture(t, "contact")
	if body := f.do(http.MethodGet, "/inbox/", nil, nil).Body.String(); strings.Contains(body, `class="alerts"`) {
		t.Fatal("a banner without open alerts")
	}
	f.openAlert(outbox.AlertDeliveryDead, "contact/webhook", "contact", "route webhook of form contact (webhook) gave up on 3 submissions", 3)
	f.openAlert(outbox.AlertDeliveryDead, "careers/email", "careers", "route email of form careers gave up", 1)
	f.openAlert(outbox.AlertSpoolBacklog, "host", "", "4 posts wait in the spool of instance host", 4)
	for _, path := range []string{"/inbox/", "/inbox/submissions", "/inbox/suppressions"} {
		body := f.do(http.MethodGet, path, nil, nil).Body.String()
		for _, want := range []string{"2 open alerts", "gave up on 3 submissions", "3 leads affected",
			`href="/inbox/submissions?delivery=dead&amp;form=contact"`, "4 posts wait in the spool"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s shows no %q", path, want)
			}
		}
		if strings.Contains(body, "careers") {
			t.Errorf("%s shows an alert of a form this inbox does not show", path)
		}
	}
}

// The unfiltered list is of leads: alert notices (form _alerts) are left out, and listed
// when their form is chosen.
func TestAlertNoticesLeftOutOfTheUnfilteredList(t *testing.T) {
	f := newFixture(t)
	lead, _ := f.accept("contact")
	a := outbox.Alert{ID: uuid.Must(uuid.NewV7()), Kind: outbox.AlertDeliveryDead, Key: "contact/webhook", Summary: "dead", OpenedAt: now}
	notice := &outbox.Submission{ID: uuid.Must(uuid.NewV7()), CreatedAt: now, Data: outbox.Fields{{Name: "kind", Value: a.Kind}}}
	p := outbox.Payload{To: "owner@example.com", Subject: "Alert", Text: "dead"}
	del := outbox.Delivery{ID: uuid.Must(uuid.NewV7()), Route: "alert-email", Channel: outbox.ChannelEmail,
		Recipient: "owner@example.com", MaxAttempts: 8, Payload: p.AppendJSON(nil)}
	n := outbox.AlertNotice{Notice: outbox.AlertOpened, Alert: a, Now: now, Submission: notice, Deliveries: []outbox.Delivery{del}}
	if ok, err := f.store.RecordAlert(context.Background(), n); !ok || err != nil {
		t.Fatalf("record alert: %v %v", ok, err)
	}
	body := f.do(http.MethodGet, "/inbox/submissions", nil, nil).Body.String()
	if !strings.Contains(body, lead.ID.String()) || strings.Contains(body, notice.ID.String()) || !strings.Contains(body, "Alert notices") {
		t.Errorf("unfiltered list: lead shown %v, notice shown %v, note shown %v", strings.Contains(body, lead.ID.String()),
			strings.Contains(body, notice.ID.String()), strings.Contains(body, "Alert notices"))
	}
	body = f.do(http.MethodGet, "/inbox/submissions?form=_alerts", nil, nil).Body.String()
	if !strings.Contains(body, notice.ID.String()) || strings.Contains(body, lead.ID.String()) {
		t.Errorf("the _alerts form's list does not show just the notice")
	}
}
