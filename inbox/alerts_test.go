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
