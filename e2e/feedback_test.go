package e2e

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/sesfake"
)

const feedbackTopic = "arn:aws:sns:eu-west-1:123456789012:form-outbox-feedback"

const feedbackCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from forms@example.com
			ses {
				region eu-west-1
				access_key_id AKIDEXAMPLE
				secret_access_key e2e-secret
				endpoint {{SES}}
			}
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		notify email Gone@Example.com
	}
	form_outbox_feedback /email-feedback {
		sns {
			topic_arn ` + feedbackTopic + `
			cert_host ^127\.0\.0\.1$
		}
	}
}
`

// snsSigner is SNS's side of the test: a signing key, its certificate served over TLS by
// a local fake (trusted by Caddy through SSL_CERT_FILE), and signed notifications.
type snsSigner struct {
	key *rsa.PrivateKey
	srv *httptest.Server
}

func newSNSSigner(t *testing.T) (*snsSigner, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "sns.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	s := &snsSigner{key: key}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(certPEM)
	}))
	t.Cleanup(s.srv.Close)
	caFile := filepath.Join(t.TempDir(), "fake-sns-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return s, caFile
}

// notification is a signature-version-2 SNS Notification carrying message.
func (s *snsSigner) notification(t *testing.T, id, message string) []byte {
	t.Helper()
	m := map[string]string{"Type": "Notification", "MessageId": id, "TopicArn": feedbackTopic, "Message": message,
		"Timestamp": time.Now().UTC().Format(time.RFC3339Nano), "SignatureVersion": "2",
		"SigningCertURL": s.srv.URL + "/SimpleNotificationService-e2e.pem"}
	text := "Message\n" + m["Message"] + "\nMessageId\n" + id + "\nTimestamp\n" + m["Timestamp"] +
		"\nTopicArn\n" + feedbackTopic + "\nType\nNotification\n"
	d := sha256.Sum256([]byte(text))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, d[:])
	if err != nil {
		t.Fatal(err)
	}
	m["Signature"] = base64.StdEncoding.EncodeToString(sig)
	b, _ := json.Marshal(m)
	return b
}

type feedbackDeliveryJSON struct {
	ID, Status string
	LastError  string `json:"last_error"`
	Feedback   []struct{ Kind, Source string }
}

// TestFeedbackSESBounceKillsDelivery is issue 9's end-to-end test: an email goes out
// through the SES fake, SNS posts a signed permanent bounce for its message id, and the
// delivery shows dead/bounced in the admin API and in metrics; the address is then
// suppressed, so the next submission is not sent, until an operator removes it.
func TestFeedbackSESBounceKillsDelivery(t *testing.T) {
	t.Parallel()
	ses := sesfake.New()
	defer ses.Close()
	signer, caFile := newSNSSigner(t)
	cf := strings.ReplaceAll(feedbackCaddyfile, "{{SES}}", ses.URL())
	p := newCaddy(t, caddyOpts{Caddyfile: cf, Env: []string{"SSL_CERT_FILE=" + caFile}})

	sub := postAdminForm(t, p, "/contact", url.Values{"message": {"hello"}})
	d := p.waitDelivery(t, sub, "sent")
	sent := ses.Sent()
	if len(sent) != 1 || sent[0].Email.Tag("outbox_id") != d.ID {
		t.Fatalf("SES got %+v, want one email tagged %s", sent, d.ID)
	}
	bounce, _ := json.Marshal(map[string]any{
		"eventType": "Bounce",
		"mail":      map[string]any{"messageId": sent[0].MessageID, "tags": map[string][]string{"outbox_id": {d.ID}}},
		"bounce": map[string]any{"bounceType": "Permanent", "bounceSubType": "General", "timestamp": time.Now().UTC(),
			"bouncedRecipients": []map[string]string{{"emailAddress": "gone@example.com", "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown"}}},
	})
	postSNS := func(body []byte) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, p.URL("/email-feedback"), strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
		req.Header.Set("x-amz-sns-message-type", "Notification")
		resp, out := do(t, req)
		return resp.StatusCode, out
	}
	notification := signer.notification(t, "e2e-sns-1", string(bounce))
	if code, body := postSNS(notification); code != http.StatusOK || !strings.Contains(body, `"outcome":"bounced/hard"`) {
		t.Fatalf("POST bounce = %d %s, want 200 bounced/hard", code, body)
	}

	var got feedbackDeliveryJSON
	p.adminJSON(t, http.MethodGet, "/form_outbox/deliveries/"+d.ID, http.StatusOK, &got)
	if got.Status != "dead" || !strings.HasPrefix(got.LastError, "bounced: Permanent/General") ||
		len(got.Feedback) != 1 || got.Feedback[0].Kind != "bounced" {
		t.Fatalf("delivery after the bounce = %+v, want dead/bounced with one feedback entry", got)
	}
	p.waitMetric(t, 1, "form_outbox_dead_deliveries")
	p.waitMetric(t, 1, "form_outbox_feedback_total", "kind", "bounced", "bounce_type", "hard", "source", "ses")
	var health struct {
		Outbox struct {
			Dead int64 `json:"dead"`
		} `json:"outbox"`
	}
	p.adminJSON(t, http.MethodGet, "/form_outbox/health", http.StatusOK, &health)
	if health.Outbox.Dead != 1 {
		t.Fatalf("health dead = %d, want 1", health.Outbox.Dead)
	}

	// SNS retrying the same message changes nothing.
	if code, body := postSNS(notification); code != http.StatusOK || !strings.Contains(body, `"duplicate":true`) {
		t.Fatalf("replayed bounce = %d %s, want 200 duplicate", code, body)
	}
	if p.metric(t, "form_outbox_feedback_total") != 1 {
		t.Fatal("a replayed notification was counted again")
	}

	// The address is suppressed: the next submission's delivery dies without a send.
	var list struct {
		Suppressions []struct{ Address, Reason string }
	}
	p.adminJSON(t, http.MethodGet, "/form_outbox/suppressions", http.StatusOK, &list)
	if len(list.Suppressions) != 1 || list.Suppressions[0].Address != "gone@example.com" || list.Suppressions[0].Reason != "bounced" {
		t.Fatalf("suppressions = %+v", list)
	}
	sub2 := postAdminForm(t, p, "/contact", url.Values{"message": {"again"}})
	d2 := p.waitDelivery(t, sub2, "dead")
	p.adminJSON(t, http.MethodGet, "/form_outbox/deliveries/"+d2.ID, http.StatusOK, &got)
	if !strings.Contains(got.LastError, "suppressed") || ses.Count() != 1 {
		t.Fatalf("suppressed delivery = %+v, SES requests %d; want dead/suppressed and no new send", got, ses.Count())
	}

	// Removing the address lets a manual retry send it.
	unsuppress := func(addr string) (int, string) {
		req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("http://127.0.0.1:%d/form_outbox/suppressions", p.AdminPort),
			strings.NewReader(`{"address":"`+addr+`"}`))
		resp, body := do(t, req)
		return resp.StatusCode, body
	}
	if code, body := unsuppress("Gone@Example.com"); code != http.StatusOK {
		t.Fatalf("DELETE suppression = %d %s", code, body)
	}
	if code, body := unsuppress("gone@example.com"); code != http.StatusNotFound {
		t.Fatalf("second DELETE = %d %s, want 404", code, body)
	}
	p.adminJSON(t, http.MethodPost, "/form_outbox/deliveries/"+d2.ID+"/retry", http.StatusOK, nil)
	p.waitDelivery(t, sub2, "sent")
	if ses.Count() != 2 {
		t.Fatalf("SES requests = %d, want 2 after the retry", ses.Count())
	}
	if strings.Contains(p.Log(), "Gone@Example.com") || strings.Contains(p.Log(), "gone@example.com") {
		t.Log(p.Log())
		t.Fatal("the recipient's address reached the log")
	}
}
