package senders

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/file"
)

// A webhook delivery goes out signed with the secret, and carrying the headers, that a
// form registered for its URL; what is registered after New still applies, because the
// providers look both up at send time.
func TestSenderSignsWebhooksWithTheRegisteredSecret(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()

	email, err := file.New(file.Config{Dir: t.TempDir(), From: "forms@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var reg Registry
	s, err := New(email, &reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	if err := reg.RegisterWebhookSecret(srv.URL, secret); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterWebhookHeaders(srv.URL, map[string]string{"X-Tenant": "acme"}); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterWebhookSecret(srv.URL, "whsec_other"); err == nil {
		t.Error("a second secret for one URL was accepted")
	}

	payload, err := json.Marshal(outbox.Payload{URL: srv.URL, Body: json.RawMessage(`{"form":"contact"}`)})
	if err != nil {
		t.Fatal(err)
	}
	d := outbox.Delivery{ID: uuid.New(), Route: "webhook", Channel: outbox.ChannelWebhook, Recipient: srv.URL, Payload: payload}
	if _, err := s.Send(context.Background(), d); err != nil {
		t.Fatalf("send: %v", err)
	}
	h := <-got
	if h.Get("Webhook-Signature") == "" || h.Get("X-Tenant") != "acme" || h.Get("Webhook-Id") != d.ID.String() {
		t.Errorf("headers %v, want a signature, X-Tenant: acme and the delivery id", h)
	}
}
