package inbox

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// A submission's spam signals are shown on its page with their score, evidence escaped;
// one without signals shows no such section.
func TestSubmissionPageShowsSpamSignals(t *testing.T) {
	f := newFixture(t)
	sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(now.Add(-time.Hour)),
		storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSpamSuspected))
	sub.Signals = []outbox.Signal{
		{Name: "time_trap_too_fast", Weight: 4, Evidence: "posted 1.2s after the token was issued (minimum 3s)"},
		{Name: "time_trap_forged", Weight: 5, Evidence: "<b>bad</b>"},
	}
	storetest.MustAccept(t, f.store, sub)

	w := f.do("GET", "/inbox/submissions/"+sub.ID.String(), nil, nil)
	body := w.Body.String()
	for _, want := range []string{
		`<strong id="reason">spam_suspected</strong>`,
		`score <strong id="score">9</strong>`,
		`<li data-signal="time_trap_too_fast"><code>time_trap_too_fast</code> <span class="weight">+4</span> <small><bdi>posted 1.2s after the token was issued (minimum 3s)</bdi></small></li>`,
		`<li data-signal="time_trap_forged"><code>time_trap_forged</code> <span class="weight">+5</span> <small><bdi>&lt;b&gt;bad&lt;/b&gt;</bdi></small></li>`,
	} {
		if w.Code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("status %d, page lacks %s:\n%s", w.Code, want, body)
		}
	}
	plain, _ := f.accept("contact")
	if page := f.do("GET", "/inbox/submissions/"+plain.ID.String(), nil, nil).Body.String(); strings.Contains(page, "Spam signals") {
		t.Errorf("a submission without signals shows a signals section:\n%s", page)
	}
}
