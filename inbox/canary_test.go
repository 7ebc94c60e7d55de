package inbox

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// TestOverviewShowsEachRoutesLastCanary: the overview lists the last canary of each
// route of the inbox's forms, a failure with its error, linked to the canary
// submission; another form's canary is not the inbox's.
func TestOverviewShowsEachRoutesLastCanary(t *testing.T) {
	f := newFixture(t, "contact")
	sub := uuid.Must(uuid.NewV7())
	f.h.cfg.Canary = func(context.Context) ([]outbox.CanaryResult, error) {
		return []outbox.CanaryResult{
			{Form: "contact", Route: "crm", Channel: outbox.ChannelWebhook, SubmissionID: sub, Error: "dead: webhook: 500 <Internal>", At: now,
				FailingSince: now.Add(-6 * time.Hour)},
			{Form: "contact", Route: "email", Channel: outbox.ChannelEmail, SubmissionID: sub, Passed: true, At: now.Add(-time.Minute)},
			{Form: "newsletter", Route: "slack", Channel: outbox.ChannelSlack, SubmissionID: sub, Passed: true, At: now},
		}, nil
	}
	w := f.do(http.MethodGet, "/inbox", nil, nil)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", w.Code, body)
	}
	for _, want := range []string{
		`<h2 id="canary-title">Canary</h2>`,
		`<td>crm <small>(webhook)</small></td>`,
		`<span class="badge dead">failed</span> dead: webhook: 500 &lt;Internal&gt;<br><small>failing since <time datetime="2031-05-06T01:08:09Z">`,
		`<td>email <small>(email)</small></td>`,
		`<span class="badge sent">passed</span>`,
		`href="/inbox/submissions/` + sub.String() + `"><time datetime="2031-05-06T07:08:09Z">`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(body, "slack") {
		t.Error("overview of the contact inbox shows the newsletter's canary")
	}

	// Without canaries there is no section.
	f.h.cfg.Canary = nil
	if body := f.do(http.MethodGet, "/inbox", nil, nil).Body.String(); strings.Contains(body, "Canary") {
		t.Error("overview shows a canary section without canaries")
	}
}
