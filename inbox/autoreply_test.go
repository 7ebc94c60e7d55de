package inbox

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// A quarantined submission's autoreply is listed with its deliveries, skipped; released
// from the inbox, it is due (the store's window rule let it through) and listed so.
func TestInboxListsAndReleasesTheAutoreply(t *testing.T) {
	f := newFixture(t)
	held := storetest.NewSubmission("contact", storetest.WithCreatedAt(now.Add(-time.Hour)),
		storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonOriginRejected))
	reply := storetest.NewAutoreply(held, "ada@example.com", 24*time.Hour)
	storetest.MustAccept(t, f.store, held, storetest.NewDelivery(held, "email", "sales@example.com"), reply)

	page := f.do("GET", "/inbox/submissions/"+held.ID.String(), nil, nil).Body.String()
	if !strings.Contains(page, "<strong>autoreply</strong> → <span class=\"target\">ada@example.com</span>") {
		t.Fatalf("detail page does not list the autoreply:\n%s", page)
	}
	if w := f.do("POST", "/inbox/submissions/"+held.ID.String()+"/release", post(), nil); w.Code != http.StatusSeeOther {
		t.Fatalf("release: %d %s", w.Code, w.Body)
	}
	d, err := f.store.GetDelivery(context.Background(), reply.ID)
	if err != nil || d.Status != outbox.DeliveryPending {
		t.Fatalf("released autoreply = %+v, %v; want pending", d, err)
	}
}
