package storetest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// heldWebhook plans a held-back submission's webhook delivery with a body as intake
// renders it (intake/render.go: id, form, status, created_at, data), whose data holds a
// field named status with the same value: only the submission's own status may change.
func heldWebhook(status outbox.SubmissionStatus, reason string) (*outbox.Submission, outbox.Delivery, string) {
	sub := NewSubmission("contact", WithCreatedAt(t0), WithStatus(status, reason),
		WithFields("status", string(status), "note", `"status":"`+string(status)+`"`))
	d := NewDelivery(sub, "webhook", "https://hooks.example.com/in")
	rest := `,"created_at":"2026-01-02T03:04:05Z","data":{"status":"` + string(status) + `","note":"\"status\":\"` + string(status) + `\""}}`
	body := `{"id":"` + sub.ID.String() + `","form":"contact","status":"` + string(status) + `"` + rest
	d.Payload = (&outbox.Payload{URL: d.Recipient, Body: json.RawMessage(body)}).AppendJSON(nil)
	return sub, d, rest
}

// A released submission's webhook deliveries describe it as it is when they are sent:
// the release rewrites the status in their stored body in its own transaction, and
// leaves every other byte of the body, and every other delivery, as planned.
var _ = register("ReleaseRestatesTheWebhookBody", func(t *testing.T, s outbox.Store) {
	for _, via := range []string{"ops", "inbox"} {
		sub, hook, rest := heldWebhook(outbox.SubmissionSpam, outbox.ReasonHoneypot)
		mail := NewDelivery(sub, "email", "sales@example.com")
		MustAccept(t, s, sub, hook, mail)
		now := t0.Add(time.Hour)
		var err error
		if via == "ops" {
			err = outbox.Ops(s).ReleaseSubmission(testCtx(t), sub.ID, now)
		} else {
			err = outbox.Inbox(s).Act(testCtx(t), outbox.Action{Kind: outbox.ActionRelease, SubmissionID: sub.ID, User: "op", Now: now})
		}
		if err != nil {
			t.Fatalf("%s release: %v", via, err)
		}
		var p outbox.Payload
		got := getDelivery(t, s, hook.ID)
		if err := json.Unmarshal(got.Payload, &p); err != nil {
			t.Fatalf("%s: payload %s: %v", via, got.Payload, err)
		}
		want := `{"id":"` + sub.ID.String() + `","form":"contact","status":"accepted"` + rest
		if string(p.Body) != want || p.URL != hook.Recipient || got.Status != outbox.DeliveryPending {
			t.Errorf("%s: released webhook %s, url %q, body\n%s\nwant\n%s", via, got.Status, p.URL, p.Body, want)
		}
		if m := getDelivery(t, s, mail.ID); !bytes.Equal(m.Payload, mail.Payload) {
			t.Errorf("%s: the e-mail's payload changed: %s", via, m.Payload)
		}
	}
})

// A webhook delivery already sent keeps the body it was sent with, whatever happens to
// its submission later: the history says what the receiver got.
var _ = register("ReleaseLeavesASentWebhookBodyAlone", func(t *testing.T, s outbox.Store) {
	sub := NewSubmission("contact", WithCreatedAt(t0))
	hook := NewDelivery(sub, "webhook", "https://hooks.example.com/in")
	MustAccept(t, s, sub, hook)
	for _, c := range claim(t, s, t0.Add(time.Minute), 10) {
		complete(t, s, c, outbox.DeliverySent, outbox.OutcomeSent, t0.Add(time.Minute), nil)
	}
	in := outbox.Inbox(s)
	if err := in.Act(testCtx(t), outbox.Action{Kind: outbox.ActionMarkSpam, SubmissionID: sub.ID, Now: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := in.Act(testCtx(t), outbox.Action{Kind: outbox.ActionRelease, SubmissionID: sub.ID, Now: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := getDelivery(t, s, hook.ID); got.Status != outbox.DeliverySent || !bytes.Equal(got.Payload, hook.Payload) {
		t.Fatalf("sent webhook after spam and release: %s %s", got.Status, got.Payload)
	}
})

// Each attempt row keeps the SHA-256 of the body the provider was sent, through the
// set-based completion and the one-by-one path alike.
var _ = register("AttemptRecordsTheBodySent", func(t *testing.T, s outbox.Store) {
	sub := NewSubmission("contact", WithCreatedAt(t0))
	hook := NewDelivery(sub, "webhook", "https://hooks.example.com/in")
	mail := NewDelivery(sub, "email", "sales@example.com")
	MustAccept(t, s, sub, hook, mail)
	sums := map[string]string{
		hook.Recipient: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		mail.Recipient: "",
	}
	var cs []outbox.Completion
	for _, d := range claim(t, s, t0.Add(time.Minute), 10) {
		c := completion(d, outbox.DeliveryFailed, outbox.OutcomeTemporary, t0.Add(time.Minute), nil)
		c.Attempt.BodySHA256 = sums[d.Recipient]
		cs = append(cs, c)
	}
	if len(cs) != 2 {
		t.Fatalf("claimed %d, want 2", len(cs))
	}
	for i, err := range s.CompleteBatch(testCtx(t), cs) {
		if err != nil {
			t.Fatalf("complete %d: %v", i, err)
		}
	}
	for _, d := range claim(t, s, t0.Add(time.Hour), 10) {
		c := completion(d, outbox.DeliverySent, outbox.OutcomeSent, t0.Add(time.Hour), nil)
		c.Attempt.BodySHA256 = sums[d.Recipient]
		if err := outbox.CompleteOne(testCtx(t), s, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []outbox.Delivery{hook, mail} {
		as, err := s.ListAttempts(testCtx(t), d.ID)
		if err != nil || len(as) != 2 {
			t.Fatalf("%s: attempts %+v (err %v), want 2", d.Recipient, as, err)
		}
		for _, a := range as {
			if a.BodySHA256 != sums[d.Recipient] {
				t.Errorf("%s attempt %d: body sha256 %q, want %q", d.Recipient, a.Attempt, a.BodySHA256, sums[d.Recipient])
			}
		}
	}
})
