package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// NewAutoreply plans sub's autoreply to address as intake does: channel autoreply, the
// normalised address as recipient, and the gate (form, key, window) in the payload.
func NewAutoreply(sub *outbox.Submission, address string, window time.Duration) outbox.Delivery {
	d := NewDelivery(sub, "autoreply", outbox.NormalizeAddress(address))
	d.Channel = outbox.ChannelAutoreply
	p := outbox.Payload{From: "Example Ltd <hello@example.com>", To: address, Subject: "We got your message",
		Text: "Thank you.\n", Autoreply: &outbox.AutoreplyGate{Form: sub.Form, Key: outbox.AutoreplyKey(address),
			WindowSeconds: int64(window / time.Second)}}
	payload, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	d.Payload = payload
	return d
}

// autoreplyOf returns the status of sub's autoreply delivery, "" when none is stored.
func autoreplyOf(t testing.TB, s outbox.Store, sub uuid.UUID) outbox.DeliveryStatus {
	t.Helper()
	ds, err := s.ListDeliveries(testCtx(t), sub)
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	var got outbox.DeliveryStatus
	for _, d := range ds {
		if d.Channel == outbox.ChannelAutoreply {
			if got != "" {
				t.Fatalf("submission %s has two autoreplies", sub)
			}
			got = d.Status
		}
	}
	return got
}

// acceptWithReply stores an accepted submission of form, created at at, with a
// notification and an autoreply to address, and returns its autoreply's status.
func acceptWithReply(t testing.TB, s outbox.Store, form, address string, at time.Time) outbox.DeliveryStatus {
	t.Helper()
	sub := NewSubmission(form, WithCreatedAt(at))
	MustAccept(t, s, sub, NewDelivery(sub, "email", "sales@example.com"), NewAutoreply(sub, address, 24*time.Hour))
	if n := len(mustList(t, s, sub.ID)); n < 1 {
		t.Fatalf("submission %s: the notification was not stored", sub.ID)
	}
	return autoreplyOf(t, s, sub.ID)
}

func mustList(t testing.TB, s outbox.Store, sub uuid.UUID) []outbox.Delivery {
	t.Helper()
	ds, err := s.ListDeliveries(testCtx(t), sub)
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	return ds
}

var _ = register("AutoreplyOncePerAddressFormAndWindow", func(t *testing.T, s outbox.Store) {
	window := 24 * time.Hour
	steps := []struct {
		form, address string
		at            time.Time
		want          outbox.DeliveryStatus
	}{
		{"contact", "Ada@Example.com", t0, outbox.DeliveryPending},
		// Same address, however it is written: within the window, no reply.
		{"contact", " ada@example.COM", t0.Add(time.Hour), ""},
		{"contact", "ada@example.com", t0.Add(window - time.Microsecond), ""},
		// Another form, another address: their own windows.
		{"newsletter", "ada@example.com", t0.Add(time.Hour), outbox.DeliveryPending},
		{"contact", "bob@example.com", t0.Add(time.Hour), outbox.DeliveryPending},
		// The window is counted from the last reply, not from the last post.
		{"contact", "ada@example.com", t0.Add(window), outbox.DeliveryPending},
		{"contact", "ada@example.com", t0.Add(window + time.Hour), ""},
	}
	for i, st := range steps {
		if got := acceptWithReply(t, s, st.form, st.address, st.at); got != st.want {
			t.Fatalf("step %d (%s %s at +%s): autoreply %q, want %q", i, st.form, st.address, st.at.Sub(t0), got, st.want)
		}
	}
	if n := countRows(t, s, "autoreplies"); n != 3 {
		t.Fatalf("autoreplies has %d rows, want 3 (one per form and address)", n)
	}
})

var _ = register("AutoreplyNeverToSuppressedAddress", func(t *testing.T, s outbox.Store) {
	if err := s.AddSuppression(testCtx(t), outbox.Suppression{Address: "gone@example.com", Reason: outbox.ReasonBounced, CreatedAt: t0}); err != nil {
		t.Fatalf("add suppression: %v", err)
	}
	if got := acceptWithReply(t, s, "contact", "Gone@Example.com", t0); got != "" {
		t.Fatalf("autoreply to a suppressed address: %q, want none", got)
	}
	// The suppressed post did not use up the window: once the address is taken off the
	// list, the next post is answered.
	if err := s.Act(testCtx(t), outbox.Action{Kind: outbox.ActionUnsuppress, Address: "gone@example.com", User: "op", Now: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("unsuppress: %v", err)
	}
	if got := acceptWithReply(t, s, "contact", "gone@example.com", t0.Add(time.Hour)); got != outbox.DeliveryPending {
		t.Fatalf("autoreply after unsuppress: %q, want pending", got)
	}
})

var _ = register("AutoreplyOfReleasedSubmissionKeepsTheWindow", func(t *testing.T, s outbox.Store) {
	// Held back: the autoreply is stored skipped, and takes no window.
	held := NewSubmission("contact", WithCreatedAt(t0), WithStatus(outbox.SubmissionQuarantined, outbox.ReasonCaptchaFailed))
	MustAccept(t, s, held, NewDelivery(held, "email", "sales@example.com"), NewAutoreply(held, "ada@example.com", 24*time.Hour))
	if got := autoreplyOf(t, s, held.ID); got != outbox.DeliverySkipped {
		t.Fatalf("quarantined submission's autoreply: %q, want skipped", got)
	}
	if n := countRows(t, s, "autoreplies"); n != 0 {
		t.Fatalf("a skipped autoreply took a window (%d rows)", n)
	}
	second := NewSubmission("contact", WithCreatedAt(t0.Add(time.Minute)), WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	// The reply first: the release's one UPDATE meets it before the notifications, which
	// must still be released when the reply is held back.
	MustAccept(t, s, second, NewAutoreply(second, "ada@example.com", 24*time.Hour),
		NewDelivery(second, "email", "sales@example.com"), NewDelivery(second, "email", "ops@example.com"))

	// Released: the reply goes out then, and starts the window at the release.
	if err := s.ReleaseSubmission(testCtx(t), held.ID, t0.Add(time.Hour)); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := autoreplyOf(t, s, held.ID); got != outbox.DeliveryPending {
		t.Fatalf("released submission's autoreply: %q, want pending", got)
	}
	// A second release within that window: its notification is due, its reply is not.
	if err := s.ReleaseSubmission(testCtx(t), second.ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := autoreplyOf(t, s, second.ID); got != outbox.DeliverySkipped {
		t.Fatalf("second release within the window: autoreply %q, want skipped", got)
	}
	notes := 0
	for _, d := range mustList(t, s, second.ID) {
		if d.Channel == outbox.ChannelEmail {
			notes++
			if d.Status != outbox.DeliveryPending {
				t.Fatalf("second release: notification to %s %s, want pending", d.Recipient, d.Status)
			}
		}
	}
	if notes != 2 {
		t.Fatalf("second release: %d notifications, want 2", notes)
	}
	// An accepted post within the window of the released reply gets none either.
	if got := acceptWithReply(t, s, "contact", "ada@example.com", t0.Add(3*time.Hour)); got != "" {
		t.Fatalf("post within the released reply's window: autoreply %q, want none", got)
	}
	if got := acceptWithReply(t, s, "contact", "ada@example.com", t0.Add(25*time.Hour)); got != outbox.DeliveryPending {
		t.Fatalf("post after the released reply's window: autoreply %q, want pending", got)
	}
})

var _ = register("AutoreplyConcurrentPostsMakeOneReply", func(t *testing.T, s outbox.Store) {
	// Concurrent accepts, alone and in batches (group commit): on PostgreSQL each goes
	// through its own pooled connection, racing for the same key; on SQLite through the
	// single writer. One reply, whoever wins.
	const posters = 8
	var wg sync.WaitGroup
	subs := make([][]*outbox.Submission, posters)
	errs := make(chan error, posters)
	for g := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var items []outbox.AcceptItem
			for k := range 1 + g%3 {
				sub := NewSubmission("contact", WithCreatedAt(t0.Add(time.Duration(g*3+k)*time.Millisecond)))
				subs[g] = append(subs[g], sub)
				items = append(items, outbox.AcceptItem{Submission: sub,
					Deliveries: []outbox.Delivery{NewDelivery(sub, "email", "sales@example.com"), NewAutoreply(sub, "ada@example.com", time.Hour)}})
			}
			if len(items) == 1 {
				_, err := outbox.AcceptOne(testCtx(t), s, items[0].Submission, items[0].Deliveries)
				errs <- err
				return
			}
			for _, o := range s.AcceptBatch(testCtx(t), items) {
				if o.Err != nil {
					errs <- o.Err
					return
				}
			}
			errs <- nil
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
	}
	replies, notes := 0, 0
	for _, group := range subs {
		for _, sub := range group {
			for _, d := range mustList(t, s, sub.ID) {
				switch d.Channel {
				case outbox.ChannelAutoreply:
					replies++
				case outbox.ChannelEmail:
					notes++
				}
			}
		}
	}
	if replies != 1 {
		t.Fatalf("%d autoreplies for concurrent posts from one address, want 1", replies)
	}
	if want := countRows(t, s, "submissions"); notes != want {
		t.Fatalf("%d notifications for %d submissions", notes, want)
	}
})

var _ = register("AutoreplyMarkedSpamThenReleasedIsDueAgain", func(t *testing.T, s outbox.Store) {
	// The reply took the window when it was accepted; marked spam before it went, then
	// released, it is the same reply and takes its own window again.
	sub := NewSubmission("contact", WithCreatedAt(t0))
	reply := NewAutoreply(sub, "ada@example.com", 24*time.Hour)
	MustAccept(t, s, sub, reply)
	if err := s.Act(testCtx(t), outbox.Action{Kind: outbox.ActionMarkSpam, SubmissionID: sub.ID, User: "op", Now: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("mark spam: %v", err)
	}
	if got := autoreplyOf(t, s, sub.ID); got != outbox.DeliverySkipped {
		t.Fatalf("autoreply of a submission marked spam: %q, want skipped", got)
	}
	if err := s.ReleaseSubmission(testCtx(t), sub.ID, t0.Add(time.Hour)); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := autoreplyOf(t, s, sub.ID); got != outbox.DeliveryPending {
		t.Fatalf("autoreply released after mark spam: %q, want pending", got)
	}
	// Still one reply per window for everyone else.
	if got := acceptWithReply(t, s, "contact", "ada@example.com", t0.Add(2*time.Hour)); got != "" {
		t.Fatalf("post within the window: autoreply %q, want none", got)
	}
})

var _ = register("AutoreplyPruneDropsClosedWindowsOnly", func(t *testing.T, s outbox.Store) {
	acceptWithReply(t, s, "contact", "old@example.com", t0)                   // window closes at t0+24h
	acceptWithReply(t, s, "contact", "new@example.com", t0.Add(48*time.Hour)) // open until t0+72h
	if _, err := s.Prune(testCtx(t), t0.Add(50*time.Hour), 100); err != nil {
		t.Fatalf("prune: %v", err)
	}
	if n := countRows(t, s, "autoreplies"); n != 1 {
		t.Fatalf("autoreplies after prune: %d rows, want 1 (the open window)", n)
	}
	// The open window still holds; the pruned one is free, as it was before the prune.
	if got := acceptWithReply(t, s, "contact", "new@example.com", t0.Add(51*time.Hour)); got != "" {
		t.Fatalf("post within the kept window: autoreply %q, want none", got)
	}
	if got := acceptWithReply(t, s, "contact", "old@example.com", t0.Add(51*time.Hour)); got != outbox.DeliveryPending {
		t.Fatalf("post after the pruned window: autoreply %q, want pending", got)
	}
})

var _ = register("AutoreplyWindowErasedWithItsSubmission", func(t *testing.T, s outbox.Store) {
	sub := NewSubmission("contact", WithCreatedAt(t0))
	MustAccept(t, s, sub, NewAutoreply(sub, "ada@example.com", 24*time.Hour))
	acceptWithReply(t, s, "contact", "bob@example.com", t0)
	if err := s.DeleteSubmission(testCtx(t), sub.ID, t0.Add(time.Minute)); err != nil {
		t.Fatalf("erase: %v", err)
	}
	if n := countRows(t, s, "autoreplies"); n != 1 {
		t.Fatalf("autoreplies after erasure: %d rows, want 1 (bob's)", n)
	}
})

var _ = register("AutoreplyBouncedAddressIsNeverRepliedToAgain", func(t *testing.T, s outbox.Store) {
	sub := NewSubmission("contact", WithCreatedAt(t0))
	MustAccept(t, s, sub, NewAutoreply(sub, "Gone@Example.com", time.Hour))
	claimed := claim(t, s, t0, 1)
	if len(claimed) != 1 || claimed[0].Channel != outbox.ChannelAutoreply {
		t.Fatalf("claimed %+v, want the autoreply", claimed)
	}
	c := complete(t, s, claimed[0], outbox.DeliverySent, outbox.OutcomeSent, t0, nil)
	res, err := s.RecordFeedback(testCtx(t), outbox.Feedback{Source: "ses", ReceiptID: "sns-ar", Kind: outbox.FeedbackBounced,
		BounceType: outbox.BounceHard, ProviderMessageID: c.ProviderMessageID, ReceivedAt: t0.Add(time.Minute), Suppress: true})
	if err != nil || !res.Dead || !res.Suppressed {
		t.Fatalf("hard bounce of an autoreply = %+v, %v; want it dead and the address suppressed", res, err)
	}
	// Long after the window: still no reply to that address, on this form or another.
	for _, form := range []string{"contact", "newsletter"} {
		if got := acceptWithReply(t, s, form, "gone@example.com", t0.Add(48*time.Hour)); got != "" {
			t.Fatalf("form %s: autoreply to a bounced address: %q, want none", form, got)
		}
	}
})
