// Package storeflow holds the sequences of steps that both stores run the same way in
// their own dialect: recording post-send feedback, the suppression list's writes, the
// operator's audited actions, a manual retry, a retention pass, writing a digest, and
// writing and reading a submission's files. Each store supplies a Driver: it opens the
// write transaction and runs one named query (its queries/*.sql) per Tx method, and it
// keeps what differs between dialects (time and uuid encoding, row locks, "no row"
// errors, how a skipped insert shows). The sequence, the checks between its steps and
// the errors it answers are written here once, so the stores cannot drift apart on them
// (docs/design.md, "Storage").
package storeflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Driver is one store's way into a write transaction.
type Driver interface {
	// WriteTx runs fn in one write transaction, committed when fn returns nil and
	// rolled back otherwise.
	WriteTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is one dialect's statements, run inside the transaction WriteTx opened. A method
// that reads one row returns outbox.ErrNotFound when there is none. A method that
// writes rows a concurrent transaction may also write locks them first where the
// dialect needs it (PostgreSQL's FOR UPDATE; SQLite's single writer serializes
// everything).
type Tx interface {
	AlertTx

	// FeedbackDeliveryByID is the email or autoreply delivery with this id.
	FeedbackDeliveryByID(ctx context.Context, id uuid.UUID) (outbox.Delivery, error)
	// FeedbackDeliveryByMessageID is an email or autoreply delivery with this provider
	// message id.
	FeedbackDeliveryByMessageID(ctx context.Context, messageID string) (outbox.Delivery, error)
	// ForgetReceipts deletes the replay keys received before before.
	ForgetReceipts(ctx context.Context, before time.Time) error
	// InsertReceipt stores a replay key; false when it was already stored.
	InsertReceipt(ctx context.Context, source, receiptID string, at time.Time) (bool, error)
	// InsertFeedback stores f (as RecordFeedback resolved it) about the delivery.
	InsertFeedback(ctx context.Context, deliveryID uuid.UUID, f outbox.Feedback) error
	// BounceDelivery makes a sent delivery dead with lastError.
	BounceDelivery(ctx context.Context, id uuid.UUID, lastError string, at time.Time) error
	// InsertSuppression lists an address (normalized) unless it is listed; false when it was.
	InsertSuppression(ctx context.Context, sp outbox.Suppression) (bool, error)
	// DeleteSuppression takes an address off the list; false when it was not listed.
	DeleteSuppression(ctx context.Context, address string) (bool, error)
	// InsertEvent stores e; a nil submission or delivery id is stored as none.
	InsertEvent(ctx context.Context, e outbox.Event) error

	// RetryTarget is what a retry of a delivery needs to know: its status and route,
	// and its submission's id and form.
	RetryTarget(ctx context.Context, deliveryID uuid.UUID) (RetryTarget, error)
	// RetryDelivery makes a delivery pending with a fresh attempt budget, due at now.
	RetryDelivery(ctx context.Context, id uuid.UUID, now time.Time) error
	// SubmissionTarget is a submission's form, status and reason.
	SubmissionTarget(ctx context.Context, id uuid.UUID) (SubmissionTarget, error)
	// AcceptSubmission makes a submission accepted, its reason empty.
	AcceptSubmission(ctx context.Context, id uuid.UUID) error
	// ReleaseDeliveries makes a submission's skipped deliveries pending with a fresh
	// attempt budget, due at now.
	ReleaseDeliveries(ctx context.Context, submissionID uuid.UUID, now time.Time) error
	// DuePayloads are the payloads of a submission's pending webhook deliveries: those a
	// release just made due, whose body restate rewrites.
	DuePayloads(ctx context.Context, submissionID uuid.UUID) ([]DeliveryPayload, error)
	// SetPayload replaces a delivery's payload.
	SetPayload(ctx context.Context, id uuid.UUID, payload []byte) error
	// MarkSpam makes a submission spam with reason.
	MarkSpam(ctx context.Context, id uuid.UUID, reason string) error
	// SkipDeliveries skips a submission's pending, failed and dead deliveries.
	SkipDeliveries(ctx context.Context, submissionID uuid.UUID, now time.Time) error
	// EraseAutoreplies deletes the autoreply windows of a submission's replies (their key
	// is derived from the visitor's address).
	EraseAutoreplies(ctx context.Context, submissionID uuid.UUID) error
	// DeleteSubmission deletes a submission with its deliveries and their attempts.
	DeleteSubmission(ctx context.Context, id uuid.UUID) error
	// SuppressionTarget is a listed address's reason and the delivery (with its
	// submission and form) whose feedback listed it, when that is still stored.
	SuppressionTarget(ctx context.Context, address string) (SuppressionTarget, error)

	// PruneSubmissions deletes at most batch submissions created before before whose
	// deliveries are all terminal, and says how many.
	PruneSubmissions(ctx context.Context, before time.Time, batch int) (int, error)
	// PruneEvents deletes at most batch of the oldest events, those before before, and
	// says how many.
	PruneEvents(ctx context.Context, before time.Time, batch int) (int, error)
	// PruneAutoreplies deletes at most batch autoreply windows that closed before before.
	// The window itself is kept by the deliveries triggers of migration 0005
	// (docs/design.md, "Autoreplies").
	PruneAutoreplies(ctx context.Context, before time.Time, batch int) error
	// UseToken inserts a used token, or leaves the row of one used before, and returns
	// the content hash of the row's first use.
	UseToken(ctx context.Context, id, contentHash string, expires time.Time) (string, error)
	// PruneUsedTokens deletes at most batch used tokens that expired before now.
	PruneUsedTokens(ctx context.Context, now time.Time, batch int) error

	// InsertDigest stores d's row, anchored at d.Items[0]; false when the period has its
	// digest already. It and InsertDigestItems skip a row whose unique key is taken (ON
	// CONFLICT DO NOTHING in queries/digest.sql) and say so (docs/design.md, "Digests").
	InsertDigest(ctx context.Context, d outbox.Digest) (bool, error)
	// InsertDigestItems lists d.Items under d's route and says how many it listed, fewer
	// than len(d.Items) when another digest of the route lists one of them (it may stop
	// at the first such one).
	InsertDigestItems(ctx context.Context, d outbox.Digest) (int, error)
	// InsertDelivery stores one planned delivery (outbox.Digest.PlannedDeliveries).
	InsertDelivery(ctx context.Context, del outbox.Delivery) error
}

// Queries names the statements a driver runs for Tx, each a query of that name in the
// store's queries/*.sql; a store fills it with sqlq.Set.MustFill, so a query missing
// from either dialect panics at start-up. The digest and file statements are named in
// each store's digest.go and files.go instead, as their shape differs (one array insert
// of a digest's items against one insert per item).
type Queries struct {
	FeedbackDeliveryByID, FeedbackDeliveryByMessageID string
	ForgetOldReceipts, InsertReceipt, InsertFeedback  string
	BounceDelivery, InsertEvent                       string
	InsertSuppression, DeleteSuppression              string
	ActRetryTarget, ActRetry                          string
	ActSubmissionTarget, ActRelease                   string
	ActReleaseDeliveries, ActMarkSpam                 string
	ActDuePayloads, ActSetPayload                     string
	ActSkipDeliveries, ActErase, ActUnsuppressTarget  string
	EraseAutoreplies                                  string
	PruneSubmissions, PruneEvents, PruneAutoreplies   string
	UseToken, PruneUsedTokens                         string
}

// RetryTarget is Tx.RetryTarget's answer.
type RetryTarget struct {
	Status       outbox.DeliveryStatus
	Route        string
	SubmissionID uuid.UUID
	Form         string
}

// DeliveryPayload is one of Tx.DuePayloads' answers.
type DeliveryPayload struct {
	ID      uuid.UUID
	Payload []byte
}

// SubmissionTarget is Tx.SubmissionTarget's answer.
type SubmissionTarget struct {
	Form   string
	Status outbox.SubmissionStatus
	Reason string
}

// SuppressionTarget is Tx.SuppressionTarget's answer; the ids are uuid.Nil and Form ""
// when the delivery is no longer stored.
type SuppressionTarget struct {
	Reason       string
	DeliveryID   uuid.UUID
	SubmissionID uuid.UUID
	Form         string
}

// RecordFeedback matches, de-duplicates and applies one feedback report in one
// transaction (see outbox.FeedbackStore).
func RecordFeedback(ctx context.Context, d Driver, f outbox.Feedback) (outbox.FeedbackResult, error) {
	f.ReceivedAt = orNow(f.ReceivedAt)
	var res outbox.FeedbackResult
	err := d.WriteTx(ctx, func(tx Tx) error {
		del, err := feedbackDelivery(ctx, tx, f)
		if err != nil {
			return err
		}
		if err := tx.ForgetReceipts(ctx, f.ReceivedAt.Add(-outbox.FeedbackReceiptTTL)); err != nil {
			return err
		}
		fresh, err := tx.InsertReceipt(ctx, f.Source, f.ReceiptID, f.ReceivedAt)
		if err != nil {
			return err
		}
		if !fresh {
			return outbox.ErrFeedbackReplay
		}
		p := outbox.PlanFeedback(del, f)
		stored := f
		stored.Diagnostic = outbox.TruncateDiagnostic(f.Diagnostic)
		stored.OccurredAt = orTime(f.OccurredAt, f.ReceivedAt)
		if err := tx.InsertFeedback(ctx, del.ID, stored); err != nil {
			return err
		}
		if p.Dead {
			if err := tx.BounceDelivery(ctx, del.ID, p.LastError, f.ReceivedAt); err != nil {
				return err
			}
			del.Status, del.LastError, del.UpdatedAt = outbox.DeliveryDead, p.LastError, f.ReceivedAt
		}
		if p.Suppress != nil {
			if res.Suppressed, err = addSuppression(ctx, tx, *p.Suppress); err != nil {
				return err
			}
		}
		if err := tx.InsertEvent(ctx, p.Event); err != nil {
			return err
		}
		res.Delivery, res.Dead = del, p.Dead
		return nil
	})
	if err != nil {
		return outbox.FeedbackResult{}, fmt.Errorf("record %s feedback %s: %w", f.Source, f.ReceiptID, err)
	}
	return res, nil
}

// feedbackDelivery finds the delivery a report is about: by the id it carries, else by
// the provider's message id (email and autoreply deliveries only).
func feedbackDelivery(ctx context.Context, tx Tx, f outbox.Feedback) (outbox.Delivery, error) {
	if f.DeliveryID != uuid.Nil {
		d, err := tx.FeedbackDeliveryByID(ctx, f.DeliveryID)
		if !errors.Is(err, outbox.ErrNotFound) {
			return d, err
		}
	}
	if f.ProviderMessageID == "" {
		return outbox.Delivery{}, outbox.ErrNotFound
	}
	return tx.FeedbackDeliveryByMessageID(ctx, f.ProviderMessageID)
}

func addSuppression(ctx context.Context, tx Tx, sp outbox.Suppression) (bool, error) {
	sp.Address = outbox.NormalizeAddress(sp.Address)
	sp.CreatedAt = orNow(sp.CreatedAt)
	return tx.InsertSuppression(ctx, sp)
}

// AddSuppression adds an address; an address already listed keeps its first reason.
func AddSuppression(ctx context.Context, d Driver, sp outbox.Suppression) error {
	err := d.WriteTx(ctx, func(tx Tx) error {
		_, err := addSuppression(ctx, tx, sp)
		return err
	})
	if err != nil {
		return fmt.Errorf("add suppression: %w", err)
	}
	return nil
}

// UseToken is outbox.TokenLedger.UseToken over d.
func UseToken(ctx context.Context, d Driver, id, contentHash string, expires time.Time) (bool, error) {
	var first string
	err := d.WriteTx(ctx, func(tx Tx) error {
		var err error
		first, err = tx.UseToken(ctx, id, contentHash, expires)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("use token: %w", err)
	}
	return first == contentHash, nil
}

// RemoveSuppression takes an address off the list; outbox.ErrNotFound when it is not
// listed.
func RemoveSuppression(ctx context.Context, d Driver, address string) error {
	err := d.WriteTx(ctx, func(tx Tx) error {
		removed, err := tx.DeleteSuppression(ctx, outbox.NormalizeAddress(address))
		if err == nil && !removed {
			err = outbox.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("remove suppression: %w", err)
	}
	return nil
}

// Retry makes a dead or failed delivery pending with a fresh attempt budget, due at now
// (see outbox.Store). last_error is kept so the operator still sees why it stopped; the
// attempts history is untouched.
func Retry(ctx context.Context, d Driver, id uuid.UUID, now time.Time) error {
	err := d.WriteTx(ctx, func(tx Tx) error {
		t, err := tx.RetryTarget(ctx, id)
		if err != nil {
			return err
		}
		if !retryable(t.Status) {
			return outbox.ErrNotRetryable
		}
		return tx.RetryDelivery(ctx, id, orNow(now))
	})
	if err != nil {
		return fmt.Errorf("retry delivery %s: %w", id, err)
	}
	return nil
}

func retryable(s outbox.DeliveryStatus) bool {
	return s == outbox.DeliveryDead || s == outbox.DeliveryFailed
}

// Act applies one operator action and records its audit event (outbox.ActionEvent) in
// one transaction (see outbox.Inbox).
func Act(ctx context.Context, d Driver, a outbox.Action) error {
	a.Now = orNow(a.Now)
	err := d.WriteTx(ctx, func(tx Tx) error {
		ev, err := act(ctx, tx, &a)
		if err != nil {
			return err
		}
		return tx.InsertEvent(ctx, ev)
	})
	if err != nil {
		return fmt.Errorf("%s %s%s: %w", a.Kind, a.SubmissionID, a.DeliveryID, err)
	}
	return nil
}

func act(ctx context.Context, tx Tx, a *outbox.Action) (outbox.Event, error) {
	switch a.Kind {
	case outbox.ActionUnsuppress:
		return unsuppress(ctx, tx, a)
	case outbox.ActionRetry:
		t, err := tx.RetryTarget(ctx, a.DeliveryID)
		if err != nil {
			return outbox.Event{}, err
		}
		if !retryable(t.Status) {
			return outbox.Event{}, outbox.ErrNotRetryable
		}
		a.SubmissionID = t.SubmissionID
		if err := tx.RetryDelivery(ctx, a.DeliveryID, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, t.Form, t.Route, string(t.Status), "")
	case outbox.ActionRelease, outbox.ActionMarkSpam, outbox.ActionErase:
	default:
		return outbox.Event{}, fmt.Errorf("unknown action %q", a.Kind)
	}
	id := a.SubmissionID
	t, err := tx.SubmissionTarget(ctx, id)
	if err != nil {
		return outbox.Event{}, err
	}
	switch a.Kind {
	case outbox.ActionRelease:
		if t.Status != outbox.SubmissionQuarantined && t.Status != outbox.SubmissionSpam {
			return outbox.Event{}, outbox.ErrNotReleasable
		}
		if err := tx.AcceptSubmission(ctx, id); err != nil {
			return outbox.Event{}, err
		}
		if err := tx.ReleaseDeliveries(ctx, id, a.Now); err != nil {
			return outbox.Event{}, err
		}
		if err := restate(ctx, tx, id, outbox.SubmissionAccepted); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, t.Form, "", string(t.Status), t.Reason)
	case outbox.ActionMarkSpam:
		if t.Status != outbox.SubmissionAccepted {
			return outbox.Event{}, outbox.ErrNotSpammable
		}
		if err := tx.MarkSpam(ctx, id, outbox.ReasonOperator); err != nil {
			return outbox.Event{}, err
		}
		// A leased delivery is the worker's until its fenced write; the rest never goes.
		if err := tx.SkipDeliveries(ctx, id, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, t.Form, "", string(t.Status), "")
	default: // outbox.ActionErase
		if err := tx.EraseAutoreplies(ctx, id); err != nil {
			return outbox.Event{}, err
		}
		if err := tx.DeleteSubmission(ctx, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, t.Form, "", "", "")
	}
}

// unsuppress takes a.Address off the suppression list. Its event is about the delivery
// whose bounce or complaint listed the address, when that is still stored, so the removal
// also shows in that submission's history.
func unsuppress(ctx context.Context, tx Tx, a *outbox.Action) (outbox.Event, error) {
	a.Address = outbox.NormalizeAddress(a.Address)
	t, err := tx.SuppressionTarget(ctx, a.Address)
	if err != nil {
		return outbox.Event{}, err
	}
	if _, err := tx.DeleteSuppression(ctx, a.Address); err != nil {
		return outbox.Event{}, err
	}
	if t.DeliveryID != uuid.Nil && t.SubmissionID != uuid.Nil {
		a.DeliveryID, a.SubmissionID = t.DeliveryID, t.SubmissionID
	}
	return outbox.ActionEvent(*a, t.Form, "", "", t.Reason)
}

// Prune deletes one batch of expired submissions whose deliveries are all terminal, then
// one batch of old events and one of closed autoreply windows, in one short transaction
// (see outbox.Ops).
func Prune(ctx context.Context, d Driver, before time.Time, batch int) (outbox.PruneResult, error) {
	var res outbox.PruneResult
	if batch <= 0 {
		return res, fmt.Errorf("prune: batch must be positive")
	}
	err := d.WriteTx(ctx, func(tx Tx) error {
		var err error
		if res.Submissions, err = tx.PruneSubmissions(ctx, before, batch); err != nil {
			return fmt.Errorf("submissions: %w", err)
		}
		if res.Events, err = tx.PruneEvents(ctx, before, batch); err != nil {
			return fmt.Errorf("events: %w", err)
		}
		if err := tx.PruneAutoreplies(ctx, before, batch); err != nil {
			return fmt.Errorf("autoreplies: %w", err)
		}
		// A used token is worth keeping only while it could still be posted: its
		// expiry, not the retention period, decides.
		if err := tx.PruneUsedTokens(ctx, time.Now(), batch); err != nil {
			return fmt.Errorf("used tokens: %w", err)
		}
		return nil
	})
	if err != nil {
		return outbox.PruneResult{}, fmt.Errorf("prune: %w", err)
	}
	return res, nil
}

// orNow lets callers leave a time unset and get the present instead.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// ClaimWindow checks a claim's parameters (see outbox.Store.Claim) and returns its
// present (p.Now, or the present when unset) and the leases' end. ok is false when
// there is nothing to claim (p.Limit <= 0).
func ClaimWindow(p outbox.ClaimParams) (now, lockedUntil time.Time, ok bool, err error) {
	if p.Limit <= 0 {
		return time.Time{}, time.Time{}, false, nil
	}
	if p.Lease <= 0 {
		return time.Time{}, time.Time{}, false, errors.New("claim deliveries: lease must be positive")
	}
	now = orNow(p.Now)
	return now, now.Add(p.Lease), true, nil
}

// restate tells a submission's due webhook deliveries its new status, in the
// transaction that changed it (outbox.RestatePayload; docs/design.md, "Told as it is
// when sent"). A payload that does not decode is left alone: the router refuses it at
// send time as bad_payload, with the delivery's id, which is where the operator looks.
func restate(ctx context.Context, tx Tx, submissionID uuid.UUID, status outbox.SubmissionStatus) error {
	ps, err := tx.DuePayloads(ctx, submissionID)
	if err != nil {
		return fmt.Errorf("due payloads: %w", err)
	}
	for _, p := range ps {
		out, changed, err := outbox.RestatePayload(p.Payload, status)
		if err != nil || !changed {
			continue
		}
		if err := tx.SetPayload(ctx, p.ID, out); err != nil {
			return fmt.Errorf("restate delivery %s: %w", p.ID, err)
		}
	}
	return nil
}
