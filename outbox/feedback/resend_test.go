package feedback_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

var svixKey = []byte("test-secret-key-0123456789abcdef")

var svixSecret = "whsec_" + base64.StdEncoding.EncodeToString(svixKey)

// svixHeaders signs body the way Svix does for Resend.
func svixHeaders(id string, ts time.Time, body []byte, key []byte) http.Header {
	stamp := fmt.Sprint(ts.Unix())
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + stamp + "."))
	mac.Write(body)
	return http.Header{
		"Svix-Id":        {id},
		"Svix-Timestamp": {stamp},
		"Svix-Signature": {"v1,bm90LXRoaXMtb25l v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))},
	}
}

func resendBody(typ, emailID string) []byte {
	data := map[string]any{"email_id": emailID, "to": []string{"gone@example.com"}}
	if typ == "email.bounced" {
		data["bounce"] = map[string]string{"type": "Permanent", "subType": "General", "message": "The recipient's mailbox does not exist."}
	}
	return mustJSON(map[string]any{"type": typ, "created_at": now.Format(time.RFC3339), "data": data})
}

func TestResendBouncedKillsDeliveryOnce(t *testing.T) {
	w := newWorld(t, nil, svixSecret)
	body := resendBody("email.bounced", w.msgID)
	h := svixHeaders("msg_1", now, body, svixKey)
	status, ans := w.post(t, body, h)
	if status != http.StatusOK || ans["outcome"] != "bounced/hard" {
		t.Fatalf("answer = %d %v, want 200 bounced/hard", status, ans)
	}
	want := state{Status: outbox.DeliveryDead, LastError: "bounced: Permanent/General The recipient's mailbox does not exist.",
		Feedback: 1, Events: 1, Suppressed: 1}
	if got := w.state(t); got != want {
		t.Fatalf("state = %+v\nwant    %+v", got, want)
	}
	if status, ans := w.post(t, body, h); status != http.StatusOK || ans["duplicate"] != true {
		t.Fatalf("replay = %d %v, want 200 duplicate", status, ans)
	}
	if got := w.state(t); got != want {
		t.Fatalf("replay changed state to %+v", got)
	}
}

func TestResendDeliveredAndDelayedAreInformational(t *testing.T) {
	w := newWorld(t, nil, svixSecret)
	for i, typ := range []string{"email.delivery_delayed", "email.delivered"} {
		body := resendBody(typ, w.msgID)
		if status, ans := w.post(t, body, svixHeaders(fmt.Sprint("msg_", i), now, body, svixKey)); status != http.StatusOK || ans["delivery_id"] != w.delivery.ID.String() {
			t.Fatalf("%s: answer = %d %v", typ, status, ans)
		}
	}
	if got := w.state(t); got != (state{Status: outbox.DeliverySent, Feedback: 2, Events: 2}) {
		t.Fatalf("state = %+v, want still sent with two entries", got)
	}
}

func TestResendRefusalsChangeNothing(t *testing.T) {
	cases := []struct {
		name   string
		req    func(w *world) ([]byte, http.Header)
		status int
		answer map[string]any
	}{
		{"bad signature", func(w *world) ([]byte, http.Header) {
			body := resendBody("email.bounced", w.msgID)
			return body, svixHeaders("msg_x", now, body, []byte("another key"))
		}, http.StatusUnauthorized, map[string]any{"error": "invalid svix signature"}},
		{"tampered body", func(w *world) ([]byte, http.Header) {
			body := resendBody("email.bounced", w.msgID)
			h := svixHeaders("msg_x", now, body, svixKey)
			return resendBody("email.complained", w.msgID), h
		}, http.StatusUnauthorized, map[string]any{"error": "invalid svix signature"}},
		{"stale timestamp", func(w *world) ([]byte, http.Header) {
			body := resendBody("email.bounced", w.msgID)
			return body, svixHeaders("msg_x", now.Add(-6*time.Minute), body, svixKey)
		}, http.StatusUnauthorized, map[string]any{"error": "stale svix-timestamp"}},
		{"missing headers", func(w *world) ([]byte, http.Header) {
			body := resendBody("email.bounced", w.msgID)
			h := svixHeaders("msg_x", now, body, svixKey)
			h.Del("Svix-Signature")
			return body, h
		}, http.StatusUnauthorized, map[string]any{"error": "missing svix signature headers"}},
		{"unknown message id", func(w *world) ([]byte, http.Header) {
			body := resendBody("email.bounced", "4ef9a417-not-ours")
			return body, svixHeaders("msg_x", now, body, svixKey)
		}, http.StatusOK, map[string]any{"ok": true, "ignored": "no delivery matches this message"}},
		{"malformed JSON", func(w *world) ([]byte, http.Header) {
			body := []byte(`{"type":"email.bounced","data":`)
			return body, svixHeaders("msg_x", now, body, svixKey)
		}, http.StatusBadRequest, map[string]any{"error": "malformed Resend event"}},
		{"SNS message without SNS configured", func(w *world) ([]byte, http.Header) {
			return []byte(`{"Type":"Notification"}`), nil
		}, http.StatusBadRequest, map[string]any{"error": "no feedback source matches this request (want a Resend webhook)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, nil, svixSecret)
			before := w.state(t)
			body, h := c.req(w)
			status, ans := w.post(t, body, h)
			if status != c.status || !equalJSON(ans, c.answer) {
				t.Fatalf("answer = %d %v, want %d %v", status, ans, c.status, c.answer)
			}
			if after := w.state(t); after != before {
				t.Fatalf("state changed from %+v to %+v", before, after)
			}
		})
	}
}
