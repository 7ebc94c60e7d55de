package feedback_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/feedback"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const topic = "arn:aws:sns:eu-west-1:123456789012:form-outbox-feedback"

var now = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

// snsFake stands in for SNS's certificate host: it serves the test certificate over TLS
// and records the SubscribeURL visits.
type snsFake struct {
	srv     *httptest.Server
	key     *rsa.PrivateKey
	mu      sync.Mutex
	visited []string
}

func newSNSFake(t *testing.T) *snsFake {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sns.test"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	f := &snsFake{key: key}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.visited = append(f.visited, r.URL.Path)
		f.mu.Unlock()
		if r.URL.Path == "/SimpleNotificationService-test.pem" {
			w.Write(certPEM)
			return
		}
		if r.URL.Path == "/confirm" {
			fmt.Fprint(w, "<ConfirmSubscriptionResponse/>")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *snsFake) visits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.visited...)
}

// message builds an SNS envelope signed with the fake's key (version 1: SHA1, 2: SHA256).
func (f *snsFake) message(typ, msgID, message string, ts time.Time, version int) map[string]string {
	m := map[string]string{
		"Type": typ, "MessageId": msgID, "TopicArn": topic, "Message": message,
		"Timestamp":        ts.Format(time.RFC3339Nano),
		"SignatureVersion": fmt.Sprint(version),
		"SigningCertURL":   f.srv.URL + "/SimpleNotificationService-test.pem",
	}
	if typ == "SubscriptionConfirmation" {
		m["Token"] = "tok"
		m["SubscribeURL"] = f.srv.URL + "/confirm"
	}
	f.sign(m)
	return m
}

func (f *snsFake) sign(m map[string]string) {
	names := []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	if m["Type"] != "Notification" {
		names = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var b strings.Builder
	for _, n := range names {
		if v, ok := m[n]; ok {
			b.WriteString(n + "\n" + v + "\n")
		}
	}
	var sig []byte
	var err error
	if m["SignatureVersion"] == "1" {
		d := sha1.Sum([]byte(b.String()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, f.key, crypto.SHA1, d[:])
	} else {
		d := sha256.Sum256([]byte(b.String()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, f.key, crypto.SHA256, d[:])
	}
	if err != nil {
		panic(err)
	}
	m["Signature"] = base64.StdEncoding.EncodeToString(sig)
}

func sesEvent(eventType, messageID string, deliveryID uuid.UUID, detail string) string {
	tags := map[string][]string{}
	if deliveryID != uuid.Nil {
		tags["outbox_id"] = []string{deliveryID.String()}
	}
	ev := map[string]any{"eventType": eventType, "mail": map[string]any{"messageId": messageID, "tags": tags}}
	switch eventType {
	case "Bounce":
		ev["bounce"] = map[string]any{"bounceType": detail, "bounceSubType": "General", "timestamp": now.Add(-time.Minute),
			"bouncedRecipients": []map[string]string{{"emailAddress": "gone@example.com", "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown"}}}
	case "Complaint":
		ev["complaint"] = map[string]any{"complaintFeedbackType": "abuse", "timestamp": now}
	case "Delivery":
		ev["delivery"] = map[string]any{"smtpResponse": "250 2.0.0 OK", "timestamp": now}
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// world is a store with one sent email delivery and a receiver in front of it.
type world struct {
	store    outbox.Store
	delivery outbox.Delivery
	msgID    string
	handler  http.Handler
	recorded []outbox.FeedbackResult
}

func newWorld(t *testing.T, fake *snsFake, resendSecret string) *world {
	t.Helper()
	s := storetest.OpenSQLite(t)
	w := &world{store: s}
	sub := storetest.NewSubmission("contact")
	d := storetest.NewDelivery(sub, "email", "Gone@Example.com")
	storetest.MustAccept(t, s, sub, d)
	ctx := context.Background()
	claimed, err := s.Claim(ctx, outbox.ClaimParams{Owner: "t", Limit: 1, Lease: time.Minute, Now: time.Now().Add(time.Hour)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	w.msgID = "0102018f-ses-message-id"
	if err := outbox.CompleteOne(ctx, s, outbox.Completion{DeliveryID: d.ID, LeaseToken: claimed[0].LeaseToken,
		Status: outbox.DeliverySent, Provider: "ses", ProviderMessageID: w.msgID, Now: time.Now(),
		Attempt: outbox.Attempt{DeliveryID: d.ID, Attempt: 1, Provider: "ses", Outcome: outbox.OutcomeSent,
			StartedAt: time.Now(), FinishedAt: time.Now(), ProviderMessageID: w.msgID}}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	w.delivery = d
	cfg := feedback.Config{Store: w.store, Suppress: true, Now: func() time.Time { return now },
		OnRecorded: func(_ outbox.Feedback, r outbox.FeedbackResult) { w.recorded = append(w.recorded, r) }}
	if fake != nil {
		client := fake.srv.Client()
		cfg.SNS = &feedback.SNSConfig{TopicARNs: []string{topic}, CertHost: regexp.MustCompile(`^127\.0\.0\.1$`), Client: client}
	}
	if resendSecret != "" {
		cfg.Resend = &feedback.ResendConfig{Secret: resendSecret}
	}
	h, err := feedback.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.handler = h
	return w
}

// state is everything feedback may change, to prove a refused message changed nothing.
type state struct {
	Status     outbox.DeliveryStatus
	LastError  string
	Feedback   int
	Events     int
	Suppressed int
}

func (w *world) state(t *testing.T) state {
	t.Helper()
	ctx := context.Background()
	d, err := w.store.GetDelivery(ctx, w.delivery.ID)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := w.store.ListFeedback(ctx, w.delivery.ID)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, k := range []string{outbox.EventDeliveryBounced, outbox.EventDeliveryComplained, outbox.EventDeliveryDelivered} {
		evs, err := w.store.ListEvents(ctx, k, 100)
		if err != nil {
			t.Fatal(err)
		}
		events += len(evs)
	}
	sup, err := w.store.ListSuppressions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return state{d.Status, d.LastError, len(fb), events, len(sup)}
}

func (w *world) post(t *testing.T, body []byte, header http.Header) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/feedback", strings.NewReader(string(body)))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	w.handler.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.String())
	}
	return rec.Code, out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
