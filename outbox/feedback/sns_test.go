package feedback_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func TestSNSHardBounceKillsDeliveryOnce(t *testing.T) {
	fake := newSNSFake(t)
	w := newWorld(t, fake, "")
	msg := mustJSON(fake.message("Notification", "sns-1", sesEvent("Bounce", w.msgID, uuid.Nil, "Permanent"), now, 1))

	status, ans := w.post(t, msg, nil)
	if status != http.StatusOK || ans["delivery_id"] != w.delivery.ID.String() || ans["outcome"] != "bounced/hard" {
		t.Fatalf("answer = %d %v, want 200 for delivery %s bounced/hard", status, ans, w.delivery.ID)
	}
	got := w.state(t)
	want := state{Status: outbox.DeliveryDead, LastError: "bounced: Permanent/General 5.1.1 smtp; 550 5.1.1 user unknown",
		Feedback: 1, Events: 1, Suppressed: 1}
	if got != want {
		t.Fatalf("state = %+v\nwant    %+v", got, want)
	}
	if len(w.recorded) != 1 || !w.recorded[0].Dead {
		t.Fatalf("OnRecorded saw %+v, want one dead result", w.recorded)
	}

	// The same message again (SNS retry or replay): acknowledged, nothing changes.
	status, ans = w.post(t, msg, nil)
	if status != http.StatusOK || ans["duplicate"] != true {
		t.Fatalf("replay answer = %d %v, want 200 duplicate", status, ans)
	}
	if after := w.state(t); after != want {
		t.Fatalf("replay changed state to %+v", after)
	}
	// One certificate download serves both messages.
	if n := len(slices.DeleteFunc(fake.visits(), func(p string) bool { return p != "/SimpleNotificationService-test.pem" })); n != 1 {
		t.Fatalf("certificate fetched %d times, want 1 (cached)", n)
	}
}

func TestSNSComplaintMatchedByOutboxTagWithSignatureV2(t *testing.T) {
	fake := newSNSFake(t)
	w := newWorld(t, fake, "")
	msg := mustJSON(fake.message("Notification", "sns-2", sesEvent("Complaint", "some-other-id", w.delivery.ID, ""), now, 2))
	status, ans := w.post(t, msg, nil)
	if status != http.StatusOK || ans["outcome"] != "complained" {
		t.Fatalf("answer = %d %v, want 200 complained", status, ans)
	}
	if got := w.state(t); got != (state{Status: outbox.DeliverySent, Feedback: 1, Events: 1, Suppressed: 1}) {
		t.Fatalf("state = %+v, want sent with one complaint and a suppression", got)
	}
	msg = mustJSON(fake.message("Notification", "sns-3", sesEvent("Delivery", w.msgID, uuid.Nil, ""), now, 2))
	if status, ans := w.post(t, msg, nil); status != http.StatusOK || ans["outcome"] != "delivered" {
		t.Fatalf("delivery answer = %d %v", status, ans)
	}
}

func TestSNSRefusalsChangeNothing(t *testing.T) {
	fake := newSNSFake(t)
	bounce := func(w *world) string { return sesEvent("Bounce", w.msgID, uuid.Nil, "Permanent") }
	cases := []struct {
		name   string
		body   func(w *world) []byte
		status int
		answer map[string]any
	}{
		{"bad signature", func(w *world) []byte {
			m := fake.message("Notification", "sns-bad", bounce(w), now, 1)
			m["Message"] = sesEvent("Bounce", w.msgID, uuid.Nil, "Permanent") + " " // signed text differs
			return mustJSON(m)
		}, http.StatusUnauthorized, map[string]any{"error": "invalid SNS signature"}},
		{"stale timestamp", func(w *world) []byte {
			return mustJSON(fake.message("Notification", "sns-old", bounce(w), now.Add(-2*time.Hour), 2))
		}, http.StatusUnauthorized, map[string]any{"error": "stale SNS message"}},
		{"certificate on another host", func(w *world) []byte {
			m := fake.message("Notification", "sns-host", bounce(w), now, 2)
			m["SigningCertURL"] = "https://sns.evil.example/SimpleNotificationService-test.pem"
			return mustJSON(m)
		}, http.StatusUnauthorized, map[string]any{"error": "signing certificate URL not allowed"}},
		{"certificate over http", func(w *world) []byte {
			m := fake.message("Notification", "sns-http", bounce(w), now, 2)
			m["SigningCertURL"] = "http://127.0.0.1/SimpleNotificationService-test.pem"
			return mustJSON(m)
		}, http.StatusUnauthorized, map[string]any{"error": "signing certificate URL not allowed"}},
		{"other topic", func(w *world) []byte {
			m := fake.message("Notification", "sns-topic", bounce(w), now, 2)
			m["TopicArn"] = "arn:aws:sns:eu-west-1:999999999999:not-ours"
			fake.sign(m)
			return mustJSON(m)
		}, http.StatusForbidden, map[string]any{"error": "SNS topic not accepted here"}},
		{"unknown message id", func(w *world) []byte {
			return mustJSON(fake.message("Notification", "sns-unknown", sesEvent("Bounce", "not-a-message-of-ours", uuid.Nil, "Permanent"), now, 2))
		}, http.StatusOK, map[string]any{"ok": true, "ignored": "no delivery matches this message"}},
		{"malformed envelope", func(*world) []byte { return []byte(`{"Type": "Notification",`) },
			http.StatusBadRequest, map[string]any{"error": "malformed SNS message"}},
		{"malformed SES event", func(w *world) []byte {
			return mustJSON(fake.message("Notification", "sns-json", "{not json", now, 2))
		}, http.StatusBadRequest, map[string]any{"error": "malformed SES event"}},
		{"untracked event type", func(w *world) []byte {
			return mustJSON(fake.message("Notification", "sns-open", `{"eventType":"Open","mail":{"messageId":"x"}}`, now, 2))
		}, http.StatusOK, map[string]any{"ok": true, "ignored": "event type not tracked"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, fake, "")
			before := w.state(t)
			status, ans := w.post(t, c.body(w), nil)
			if status != c.status || !equalJSON(ans, c.answer) {
				t.Fatalf("answer = %d %v, want %d %v", status, ans, c.status, c.answer)
			}
			if after := w.state(t); after != before {
				t.Fatalf("state changed from %+v to %+v", before, after)
			}
		})
	}
	for _, v := range fake.visits() {
		if v != "/SimpleNotificationService-test.pem" {
			t.Fatalf("the receiver fetched %q", v)
		}
	}
}

func TestSNSSubscriptionConfirmationVisitsSubscribeURL(t *testing.T) {
	fake := newSNSFake(t)
	w := newWorld(t, fake, "")
	status, ans := w.post(t, mustJSON(fake.message("SubscriptionConfirmation", "sns-sub", "You have chosen to subscribe", now, 1)), nil)
	if status != http.StatusOK || ans["ok"] != true {
		t.Fatalf("answer = %d %v, want 200", status, ans)
	}
	if !slices.Contains(fake.visits(), "/confirm") {
		t.Fatalf("SubscribeURL not visited; visits %v", fake.visits())
	}

	// A SubscribeURL off the SNS hosts is never visited, even in a validly signed message.
	m := fake.message("SubscriptionConfirmation", "sns-sub2", "x", now, 2)
	m["SubscribeURL"] = "https://attacker.example/confirm"
	fake.sign(m)
	if status, _ := w.post(t, mustJSON(m), nil); status != http.StatusBadRequest {
		t.Fatalf("foreign SubscribeURL answered %d, want 400", status)
	}
}

func equalJSON(a, b map[string]any) bool {
	return string(mustJSON(a)) == string(mustJSON(b))
}
