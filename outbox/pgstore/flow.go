package pgstore

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// flow is the store as a storeflow.Driver (and storeflow.FileReader): the sequences of
// feedback.go, inbox.go, lease.go, ops.go, digest.go and files.go are written once in
// outbox/internal/storeflow, over the statements of queries/feedback.sql, inbox.sql,
// ops.sql, digest.sql and files.sql run here and in digest.go and files.go.
type flow struct{ s *Store }

func (f flow) WriteTx(ctx context.Context, fn func(storeflow.Tx) error) error {
	return f.s.tx(ctx, func(tx pgx.Tx) error { return fn(flowTx{tx}) })
}

// flowTx runs the statements in one transaction. The rows a sequence reads before it
// writes them are locked (FOR UPDATE in the queries), so concurrent instances serialize
// on them.
type flowTx struct{ tx pgx.Tx }

// oneDelivery reads one delivery, outbox.ErrNotFound when there is none.
func (t flowTx) oneDelivery(ctx context.Context, q string, arg any) (outbox.Delivery, error) {
	d, err := scanDelivery(t.tx.QueryRow(ctx, q, arg))
	if isNoRows(err) {
		return d, outbox.ErrNotFound
	}
	return d, err
}

func (t flowTx) FeedbackDeliveryByID(ctx context.Context, id uuid.UUID) (outbox.Delivery, error) {
	return t.oneDelivery(ctx, fq.FeedbackDeliveryByID, [16]byte(id))
}

func (t flowTx) FeedbackDeliveryByMessageID(ctx context.Context, messageID string) (outbox.Delivery, error) {
	return t.oneDelivery(ctx, fq.FeedbackDeliveryByMessageID, messageID)
}

func (t flowTx) ForgetReceipts(ctx context.Context, before time.Time) error {
	_, err := t.tx.Exec(ctx, fq.ForgetOldReceipts, before)
	return err
}

func (t flowTx) InsertReceipt(ctx context.Context, source, receiptID string, at time.Time) (bool, error) {
	tag, err := t.tx.Exec(ctx, fq.InsertReceipt, source, receiptID, at)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) InsertFeedback(ctx context.Context, deliveryID uuid.UUID, f outbox.Feedback) error {
	_, err := t.tx.Exec(ctx, fq.InsertFeedback, [16]byte(deliveryID), f.Source, string(f.Kind), f.BounceType,
		f.Diagnostic, f.ProviderMessageID, f.ReceiptID, f.OccurredAt, f.ReceivedAt)
	return err
}

func (t flowTx) BounceDelivery(ctx context.Context, id uuid.UUID, lastError string, at time.Time) error {
	_, err := t.tx.Exec(ctx, fq.BounceDelivery, lastError, at, [16]byte(id))
	return err
}

func (t flowTx) InsertSuppression(ctx context.Context, sp outbox.Suppression) (bool, error) {
	tag, err := t.tx.Exec(ctx, fq.InsertSuppression, sp.Address, sp.Reason, nullID(sp.DeliveryID), sp.CreatedAt)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) DeleteSuppression(ctx context.Context, address string) (bool, error) {
	tag, err := t.tx.Exec(ctx, fq.DeleteSuppression, address)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) InsertEvent(ctx context.Context, e outbox.Event) error {
	_, err := t.tx.Exec(ctx, fq.InsertEvent, e.Kind, nullID(e.SubmissionID), nullID(e.DeliveryID), string(e.Data), e.At)
	return err
}

func (t flowTx) RetryTarget(ctx context.Context, deliveryID uuid.UUID) (storeflow.RetryTarget, error) {
	var (
		r      storeflow.RetryTarget
		status string
	)
	err := t.tx.QueryRow(ctx, fq.ActRetryTarget, [16]byte(deliveryID)).Scan(&status, &r.Route, (*[16]byte)(&r.SubmissionID), &r.Form)
	if isNoRows(err) {
		return r, outbox.ErrNotFound
	}
	r.Status = outbox.DeliveryStatus(status)
	return r, err
}

func (t flowTx) RetryDelivery(ctx context.Context, id uuid.UUID, now time.Time) error {
	_, err := t.tx.Exec(ctx, fq.ActRetry, [16]byte(id), now)
	return err
}

func (t flowTx) SubmissionTarget(ctx context.Context, id uuid.UUID) (storeflow.SubmissionTarget, error) {
	var (
		r      storeflow.SubmissionTarget
		status string
	)
	err := t.tx.QueryRow(ctx, fq.ActSubmissionTarget, [16]byte(id)).Scan(&r.Form, &status, &r.Reason)
	if isNoRows(err) {
		return r, outbox.ErrNotFound
	}
	r.Status = outbox.SubmissionStatus(status)
	return r, err
}

func (t flowTx) AcceptSubmission(ctx context.Context, id uuid.UUID) error {
	_, err := t.tx.Exec(ctx, fq.ActRelease, [16]byte(id))
	return err
}

func (t flowTx) ReleaseDeliveries(ctx context.Context, submissionID uuid.UUID, now time.Time) error {
	_, err := t.tx.Exec(ctx, fq.ActReleaseDeliveries, [16]byte(submissionID), now)
	return err
}

func (t flowTx) DuePayloads(ctx context.Context, submissionID uuid.UUID) ([]storeflow.DeliveryPayload, error) {
	rows, err := t.tx.Query(ctx, fq.ActDuePayloads, [16]byte(submissionID))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (storeflow.DeliveryPayload, error) {
		var p storeflow.DeliveryPayload
		err := r.Scan((*[16]byte)(&p.ID), &p.Payload)
		return p, err
	})
}

func (t flowTx) SetPayload(ctx context.Context, id uuid.UUID, payload []byte) error {
	_, err := t.tx.Exec(ctx, fq.ActSetPayload, [16]byte(id), string(payload))
	return err
}

func (t flowTx) MarkSpam(ctx context.Context, id uuid.UUID, reason string) error {
	_, err := t.tx.Exec(ctx, fq.ActMarkSpam, [16]byte(id), reason)
	return err
}

func (t flowTx) SkipDeliveries(ctx context.Context, submissionID uuid.UUID, now time.Time) error {
	_, err := t.tx.Exec(ctx, fq.ActSkipDeliveries, [16]byte(submissionID), now)
	return err
}

func (t flowTx) EraseAutoreplies(ctx context.Context, submissionID uuid.UUID) error {
	_, err := t.tx.Exec(ctx, fq.EraseAutoreplies, [16]byte(submissionID))
	return err
}

func (t flowTx) DeleteSubmission(ctx context.Context, id uuid.UUID) error {
	var deliveries [][16]byte
	if err := t.tx.QueryRow(ctx, fq.ActErase, [16]byte(id)).Scan(&deliveries); err != nil {
		return err
	}
	return t.deleteAttempts(ctx, deliveries)
}

// deleteAttempts deletes the attempts of deliveries just deleted: PostgreSQL has no
// foreign key to cascade them (migrations/0008).
func (t flowTx) deleteAttempts(ctx context.Context, deliveries [][16]byte) error {
	if len(deliveries) == 0 {
		return nil
	}
	_, err := t.tx.Exec(ctx, qDeleteAttempts, deliveries)
	return err
}

func (t flowTx) SuppressionTarget(ctx context.Context, address string) (storeflow.SuppressionTarget, error) {
	var (
		r                        storeflow.SuppressionTarget
		deliveryID, submissionID *uuid.UUID
	)
	err := t.tx.QueryRow(ctx, fq.ActUnsuppressTarget, address).Scan(&r.Reason, &deliveryID, &submissionID, &r.Form)
	if isNoRows(err) {
		return r, outbox.ErrNotFound
	}
	if deliveryID != nil && submissionID != nil {
		r.DeliveryID, r.SubmissionID = *deliveryID, *submissionID
	}
	return r, err
}

func (t flowTx) PruneSubmissions(ctx context.Context, before time.Time, batch int) (int, error) {
	var (
		n          int
		deliveries [][16]byte
	)
	if err := t.tx.QueryRow(ctx, fq.PruneSubmissions, before, batch).Scan(&n, &deliveries); err != nil {
		return 0, err
	}
	return n, t.deleteAttempts(ctx, deliveries)
}

func (t flowTx) PruneEvents(ctx context.Context, before time.Time, batch int) (int, error) {
	tag, err := t.tx.Exec(ctx, fq.PruneEvents, before, batch)
	return int(tag.RowsAffected()), err
}

func (t flowTx) PruneAutoreplies(ctx context.Context, before time.Time, batch int) error {
	_, err := t.tx.Exec(ctx, fq.PruneAutoreplies, before, batch)
	return err
}

var _ storeflow.Driver = flow{}

func (t flowTx) UseToken(ctx context.Context, id, contentHash string, expires time.Time) (string, error) {
	var first string
	err := t.tx.QueryRow(ctx, fq.UseToken, id, contentHash, expires).Scan(&first)
	return first, err
}

func (t flowTx) PruneUsedTokens(ctx context.Context, now time.Time, batch int) error {
	_, err := t.tx.Exec(ctx, fq.PruneUsedTokens, now, batch)
	return err
}

// UseToken records a used spam token (outbox.TokenLedger).
func (s *Store) UseToken(ctx context.Context, id, contentHash string, expires time.Time) (bool, error) {
	return storeflow.UseToken(ctx, flow{s}, id, contentHash, expires)
}
