package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// sentDelivery stores a delivery to recipient and records it sent at t0; it returns the
// delivery and its provider message id.
func sentDelivery(t testing.TB, s outbox.Store, recipient string) (outbox.Delivery, string) {
	t.Helper()
	sub := NewSubmission("contact", WithCreatedAt(t0))
	d := NewDelivery(sub, "email", recipient)
	MustAccept(t, s, sub, d)
	claimed := claim(t, s, t0, 1)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d deliveries, want 1", len(claimed))
	}
	c := complete(t, s, claimed[0], outbox.DeliverySent, outbox.OutcomeSent, t0, nil)
	return getDelivery(t, s, d.ID), c.ProviderMessageID
}

func countEvents(t testing.TB, s outbox.Store, kind string) int {
	t.Helper()
	evs, err := s.ListEvents(testCtx(t), kind, 100)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	return len(evs)
}

var _ = register("FeedbackHardBounceKillsSentDeliveryAndSuppresses", func(t *testing.T, s outbox.Store) {
	fs := outbox.FeedbackStore(s)
	d, msgID := sentDelivery(t, s, "Gone@Example.com")
	now := t0.Add(minutes(5))
	res, err := fs.RecordFeedback(testCtx(t), outbox.Feedback{
		Source: "ses", ReceiptID: "sns-1", Kind: outbox.FeedbackBounced, BounceType: outbox.BounceHard,
		Diagnostic: "smtp; 550 5.1.1 user unknown", ProviderMessageID: msgID,
		OccurredAt: t0.Add(minutes(1)), ReceivedAt: now, Suppress: true,
	})
	if err != nil {
		t.Fatalf("record feedback: %v", err)
	}
	if res.Delivery.ID != d.ID || !res.Dead || !res.Suppressed {
		t.Fatalf("result = %+v, want delivery %s dead and suppressed", res, d.ID)
	}
	got := getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliveryDead || got.LastError != "bounced: smtp; 550 5.1.1 user unknown" {
		t.Fatalf("delivery = %s %q, want dead with the bounce as last error", got.Status, got.LastError)
	}
	st, err := s.Stats(testCtx(t), now)
	if err != nil || st.Dead != 1 {
		t.Fatalf("stats = %+v, %v; want 1 dead", st, err)
	}
	fb, err := fs.ListFeedback(testCtx(t), d.ID)
	if err != nil || len(fb) != 1 {
		t.Fatalf("feedback = %+v, %v; want one entry", fb, err)
	}
	if f := fb[0]; f.Kind != outbox.FeedbackBounced || f.BounceType != outbox.BounceHard || f.Source != "ses" ||
		f.ProviderMessageID != msgID || !f.OccurredAt.Equal(t0.Add(minutes(1))) || !f.ReceivedAt.Equal(now) {
		t.Fatalf("feedback entry = %+v", f)
	}
	if n := countEvents(t, s, outbox.EventDeliveryBounced); n != 1 {
		t.Fatalf("%d delivery.bounced events, want 1", n)
	}
	if ok, err := fs.IsSuppressed(testCtx(t), "gone@example.COM "); err != nil || !ok {
		t.Fatalf("IsSuppressed = %v, %v; want true", ok, err)
	}
	list, err := fs.ListSuppressions(testCtx(t), 0)
	if err != nil || len(list) != 1 || list[0].Address != "gone@example.com" || list[0].Reason != "bounced" || list[0].DeliveryID != d.ID {
		t.Fatalf("suppressions = %+v, %v", list, err)
	}
})

var _ = register("FeedbackReplayAndUnknownMessageWriteNothing", func(t *testing.T, s outbox.Store) {
	fs := outbox.FeedbackStore(s)
	d, msgID := sentDelivery(t, s, "sales@example.com")
	soft := outbox.Feedback{Source: "resend", ReceiptID: "msg_1", Kind: outbox.FeedbackBounced,
		BounceType: outbox.BounceSoft, Diagnostic: "mailbox full", ProviderMessageID: msgID, ReceivedAt: t0.Add(minutes(1))}
	if _, err := fs.RecordFeedback(testCtx(t), soft); err != nil {
		t.Fatalf("record: %v", err)
	}
	if _, err := fs.RecordFeedback(testCtx(t), soft); !errors.Is(err, outbox.ErrFeedbackReplay) {
		t.Fatalf("replay: err = %v, want ErrFeedbackReplay", err)
	}
	unknown := soft
	unknown.ReceiptID, unknown.ProviderMessageID = "msg_2", "no-such-message"
	if _, err := fs.RecordFeedback(testCtx(t), unknown); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("unknown message: err = %v, want ErrNotFound", err)
	}
	// A webhook delivery is never matched, even by its id.
	unknown.DeliveryID = uuid.Must(uuid.NewV7())
	if _, err := fs.RecordFeedback(testCtx(t), unknown); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("unknown delivery id: err = %v, want ErrNotFound", err)
	}
	// Nor is a webhook delivery that exists and was sent, by either of its ids.
	hookSub := NewSubmission("contact", WithCreatedAt(t0))
	MustAccept(t, s, hookSub, NewDelivery(hookSub, "crm", "https://crm.example.com/hook"))
	claimed := claim(t, s, t0, 1)
	if len(claimed) != 1 || claimed[0].Channel != outbox.ChannelWebhook {
		t.Fatalf("claimed %+v, want the webhook delivery", claimed)
	}
	hook := completion(claimed[0], outbox.DeliverySent, outbox.OutcomeSent, t0, nil)
	hook.ProviderMessageID = "hook-message"
	if err := outbox.CompleteOne(testCtx(t), s, hook); err != nil {
		t.Fatalf("complete webhook: %v", err)
	}
	onHook := unknown
	onHook.DeliveryID, onHook.ProviderMessageID = hook.DeliveryID, hook.ProviderMessageID
	if _, err := fs.RecordFeedback(testCtx(t), onHook); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("webhook delivery: err = %v, want ErrNotFound", err)
	}
	if fb, _ := fs.ListFeedback(testCtx(t), hook.DeliveryID); len(fb) != 0 {
		t.Fatalf("feedback stored on a webhook delivery: %+v", fb)
	}
	got := getDelivery(t, s, d.ID)
	if got.Status != outbox.DeliverySent {
		t.Fatalf("soft bounce changed the delivery to %s", got.Status)
	}
	fb, _ := fs.ListFeedback(testCtx(t), d.ID)
	if len(fb) != 1 || countEvents(t, s, outbox.EventDeliveryBounced) != 1 {
		t.Fatalf("feedback %d entries, %d events; want 1 and 1", len(fb), countEvents(t, s, outbox.EventDeliveryBounced))
	}
	// The unknown message's receipt was not remembered: once it matches, it is applied.
	unknown.ProviderMessageID, unknown.DeliveryID = msgID, uuid.Nil
	if _, err := fs.RecordFeedback(testCtx(t), unknown); err != nil {
		t.Fatalf("receipt of an unmatched message was remembered: %v", err)
	}
	if list, _ := fs.ListSuppressions(testCtx(t), 0); len(list) != 0 {
		t.Fatalf("a soft bounce suppressed %+v", list)
	}
})

var _ = register("FeedbackMatchesByDeliveryIDAndRecordsComplaintsAndDeliveries", func(t *testing.T, s outbox.Store) {
	fs := outbox.FeedbackStore(s)
	d, _ := sentDelivery(t, s, "sales@example.com")
	at := t0.Add(minutes(2))
	for i, f := range []outbox.Feedback{
		{Kind: outbox.FeedbackDelivered, Diagnostic: "250 OK"},
		{Kind: outbox.FeedbackComplained, Diagnostic: "abuse", Suppress: true},
	} {
		f.Source, f.ReceiptID, f.DeliveryID, f.ReceivedAt = "ses", "r"+string(rune('a'+i)), d.ID, at
		f.ProviderMessageID = "from-an-earlier-attempt"
		res, err := fs.RecordFeedback(testCtx(t), f)
		if err != nil || res.Delivery.ID != d.ID || res.Dead {
			t.Fatalf("record %s: %+v, %v", f.Kind, res, err)
		}
	}
	if got := getDelivery(t, s, d.ID); got.Status != outbox.DeliverySent {
		t.Fatalf("delivery is %s after a complaint, want sent", got.Status)
	}
	if countEvents(t, s, outbox.EventDeliveryDelivered) != 1 || countEvents(t, s, outbox.EventDeliveryComplained) != 1 {
		t.Fatal("want one delivery.delivered and one delivery.complained event")
	}
	list, err := fs.ListSuppressions(testCtx(t), 0)
	if err != nil || len(list) != 1 || list[0].Reason != "complained" {
		t.Fatalf("suppressions = %+v, %v; want the complainer", list, err)
	}
})

var _ = register("SuppressionListAddListRemove", func(t *testing.T, s outbox.Store) {
	fs := outbox.FeedbackStore(s)
	ctx := testCtx(t)
	for i, a := range []string{"a@example.com", "B@Example.com", "a@example.com"} {
		if err := fs.AddSuppression(ctx, outbox.Suppression{Address: a, Reason: "manual", CreatedAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatalf("add %s: %v", a, err)
		}
	}
	list, err := fs.ListSuppressions(ctx, 0)
	if err != nil || len(list) != 2 || list[0].Address != "b@example.com" || list[1].Address != "a@example.com" ||
		!list[1].CreatedAt.Equal(t0) {
		t.Fatalf("suppressions = %+v, %v; want b then a (first add kept)", list, err)
	}
	if err := fs.RemoveSuppression(ctx, "A@example.com"); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := fs.RemoveSuppression(ctx, "a@example.com"); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("remove twice: err = %v, want ErrNotFound", err)
	}
	if ok, _ := fs.IsSuppressed(ctx, "a@example.com"); ok {
		t.Fatal("a removed address is still suppressed")
	}
})
