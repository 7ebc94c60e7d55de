package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// hookRequest is one request a webhook receiver got.
type hookRequest struct {
	Body               []byte
	ID, Timestamp, Sig string
}

// A honeypot-spam post is held (its webhook skipped); released by the operator, through
// the admin API on SQLite and the CLI on PostgreSQL, it reaches the receiver described
// as it is then, "status":"accepted", under a valid Standard Webhooks signature over the
// very body received and the delivery's id; the attempt history holds that body's hash.
func TestReleasedSpamReachesTheWebhookAsAccepted(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			got := make(chan hookRequest, 4)
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- hookRequest{b, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")}
			}))
			defer hook.Close()
			storage := "sqlite " + filepath.Join(t.TempDir(), "forms.db")
			if store == "postgres" {
				pc := storetest.NewPostgresSchemaName(t)
				storage = fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
			}
			p := newCaddy(t, caddyOpts{Caddyfile: adminConfig(storage, hook.URL)})

			id := postAdminForm(t, p, "/hook", url.Values{"name": {"Ada"}, "status": {"spam"}, "_gotcha": {"x"}})
			var sub submissionJSON
			p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+id, 200, &sub)
			if sub.Status != "spam" || len(sub.Deliveries) != 1 || sub.Deliveries[0].Status != "skipped" {
				t.Fatalf("honeypot post stored %s with deliveries %+v, want spam with one skipped", sub.Status, sub.Deliveries)
			}
			if store == "sqlite" {
				p.adminJSON(t, http.MethodPost, "/form_outbox/submissions/"+id+"/release", 200, nil)
			} else {
				p.cli(t, true, "release", id)
			}
			var req hookRequest
			select {
			case req = <-got:
			case <-time.After(30 * time.Second):
				t.Fatalf("the released post never reached the webhook\n%s", p.Log())
			}
			var body struct {
				ID, Status string
				Data       map[string]string
			}
			if err := json.Unmarshal(req.Body, &body); err != nil {
				t.Fatalf("webhook body %s: %v", req.Body, err)
			}
			// The visitor's own field named status is data, and stays as sent.
			if body.ID != id || body.Status != "accepted" || body.Data["status"] != "spam" || body.Data["name"] != "Ada" {
				t.Fatalf("webhook body %s: want the submission as accepted, its data as sent", req.Body)
			}
			key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_"))
			mac := hmac.New(sha256.New, key)
			mac.Write([]byte(req.ID + "." + req.Timestamp + "."))
			mac.Write(req.Body)
			if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); req.Sig != want || req.ID != sub.Deliveries[0].ID {
				t.Fatalf("webhook-id %q signature %q; want the delivery id %q and %q", req.ID, req.Sig, sub.Deliveries[0].ID, want)
			}
			sum := sha256.Sum256(req.Body)
			var hist []struct{ Outcome, BodySHA256 string }
			if err := waitFor(20*time.Second, func() bool {
				var s struct {
					Deliveries []struct {
						History []struct {
							Outcome    string
							BodySHA256 string `json:"body_sha256"`
						}
					}
				}
				p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+id, 200, &s)
				hist = hist[:0]
				for _, a := range s.Deliveries[0].History {
					hist = append(hist, struct{ Outcome, BodySHA256 string }{a.Outcome, a.BodySHA256})
				}
				return len(hist) == 1
			}); err != nil || hist[0].Outcome != "sent" || hist[0].BodySHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("attempt history %+v (%v), want one sent attempt with body sha256 %x", hist, err, sum)
			}
		})
	}
}
