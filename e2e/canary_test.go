package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/slackfake"
)

// canaryCaddyfile has a form with two webhooks, one that answers 200 and one that
// answers 500, and a canary every 6 hours: the first canary runs when Caddy starts (its
// period has none yet). One webhook attempt makes the 500 dead at once. Owner alerts go
// to Slack.
const canaryCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		{{STORAGE}}
		worker {
			poll_interval 1s
		}
		retry {
			webhook_attempts 1
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
		alerts {
			notify slack {{SLACK}}
			interval 200ms
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field name required
		notify webhook {{GOOD}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
		notify webhook {{BAD}} {
			secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
		}
		canary every 6h
	}
}
`

// hookRecorder is a webhook receiver that answers status and keeps every body.
type hookRecorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newHookRecorder(t *testing.T, status int) *hookRecorder {
	h := &hookRecorder{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookRecorder) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

// canaryHealth is the canary part of GET /form_outbox/health.
type canaryHealth struct {
	Status string `json:"status"`
	Canary []struct {
		Form, Route, Channel, Error string
		Passed                      bool
	} `json:"canary"`
}

// checkCanary starts Caddy with storage, waits for both routes' verdicts in the health
// body, and checks what the receivers, the health endpoint and `status` show.
func checkCanary(t *testing.T, storage string) {
	good, bad := newHookRecorder(t, http.StatusOK), newHookRecorder(t, http.StatusInternalServerError)
	sl := slackfake.New()
	t.Cleanup(sl.Close)
	cf := strings.NewReplacer("{{STORAGE}}", storage, "{{GOOD}}", good.srv.URL, "{{BAD}}", bad.srv.URL,
		"{{SLACK}}", sl.URL()).Replace(canaryCaddyfile)
	p := newCaddy(t, caddyOpts{Caddyfile: cf})

	var h canaryHealth
	if err := waitFor(60*time.Second, func() bool {
		h = canaryHealth{}
		code, body := p.admin(t, http.MethodGet, "/form_outbox/health")
		return code == http.StatusOK && json.Unmarshal([]byte(body), &h) == nil && len(h.Canary) == 2
	}); err != nil {
		t.Fatalf("no canary verdicts in health: %v (last: %+v)\n%s", err, h, p.Log())
	}
	byRoute := map[string]string{}
	for _, c := range h.Canary {
		v := "passed"
		if !c.Passed {
			v = "failed: " + c.Error
		}
		byRoute[c.Form+"/"+c.Route+" "+c.Channel] = v
	}
	if byRoute["contact/webhook webhook"] != "passed" || !strings.HasPrefix(byRoute["contact/webhook-2 webhook"], "failed: dead: ") ||
		!strings.Contains(byRoute["contact/webhook-2 webhook"], "500") || h.Status != "ok" {
		t.Errorf("health = %s with verdicts %v; want ok, webhook passed, webhook-2 failed dead with the 500", h.Status, byRoute)
	}

	// The receivers saw a test-flagged submission of the form, nothing else.
	for name, r := range map[string]*hookRecorder{"good": good, "bad": bad} {
		got := r.received()
		if len(got) == 0 {
			t.Errorf("%s receiver got nothing", name)
		}
		for _, b := range got {
			var body struct {
				Form   string            `json:"form"`
				Status string            `json:"status"`
				Test   bool              `json:"test"`
				Data   map[string]string `json:"data"`
			}
			if err := json.Unmarshal([]byte(b), &body); err != nil || body.Form != "contact" || body.Status != "accepted" ||
				!body.Test || body.Data["name"] != "canary" {
				t.Errorf("%s receiver got %s (%v), want the contact form's canary with \"test\":true", name, b, err)
			}
		}
	}

	out := p.cli(t, true, "status")
	for _, want := range []string{"contact/webhook (webhook) passed at ", "contact/webhook-2 (webhook) FAILED since ", ": dead: temporary (HTTP 500)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not print %q:\n%s", want, out)
		}
	}
	// The owner hears of the failed route on another channel, once; the canary's dead
	// delivery is no lead, so no delivery_dead alert.
	if err := waitFor(30*time.Second, func() bool { return len(sl.Messages()) >= 1 }); err != nil {
		t.Fatalf("no canary alert reached Slack: %v\n%s", err, p.Log())
	}
	if m := slackfake.Unescape(sl.Messages()[0].Text); !strings.Contains(m, "the canary of form contact did not arrive through route webhook-2 (webhook)") {
		t.Errorf("slack got %q, want the canary alert", m)
	}
	l := alertsList(t, p)
	if len(l.Open) != 1 || l.Open[0].Kind != "canary_failed" || l.Open[0].Key != "contact/webhook-2" || l.Open[0].Channel != "webhook" {
		t.Errorf("open alerts = %+v, want only canary_failed for contact/webhook-2", l.Open)
	}
	// The canary is a test submission: listed as one, counted apart from leads.
	var list struct {
		Items []struct {
			Test bool `json:"test"`
		} `json:"items"`
	}
	p.adminJSON(t, http.MethodGet, "/form_outbox/submissions?form=contact", http.StatusOK, &list)
	if len(list.Items) == 0 || !list.Items[0].Test {
		t.Errorf("submissions of contact = %+v, want the canary, marked test", list.Items)
	}
}

// TestCanarySQLite: through the built Caddy on SQLite, the canary reaches a webhook
// answering 200 flagged as a test and passes; through one answering 500 it fails, and
// health and `caddy form-outbox status` say so.
func TestCanarySQLite(t *testing.T) {
	t.Parallel()
	checkCanary(t, "storage sqlite {{DIR}}/forms.db")
}

// TestCanaryPostgres: the same on PostgreSQL.
func TestCanaryPostgres(t *testing.T) {
	t.Parallel()
	pc := storetest.NewPostgresSchemaName(t)
	checkCanary(t, fmt.Sprintf("storage postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema))
}
