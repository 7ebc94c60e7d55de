package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// flow is the store as a storeflow.Driver (and storeflow.FileReader): the sequences of
// feedback.go, inbox.go, lease.go, ops.go, digest.go and files.go are written once in
// outbox/internal/storeflow, over the statements of queries/feedback.sql, inbox.sql,
// ops.sql, digest.sql and files.sql run here and in digest.go and files.go. Times are stored as Unix
// microseconds and ids as text.
type flow struct{ s *Store }

func (f flow) WriteTx(ctx context.Context, fn func(storeflow.Tx) error) error {
	return f.s.writeTx(ctx, func(tx *txStmts) error { return fn(flowTx{tx}) })
}

// pruneFlow is flow with each write in a transaction of its own: a prune batch deletes up
// to a batch of submissions with their deliveries, attempts and files, and other writes
// should not wait for that to commit theirs.
type pruneFlow struct{ flow }

func (f pruneFlow) WriteTx(ctx context.Context, fn func(storeflow.Tx) error) error {
	return f.s.writeTxAlone(ctx, func(tx *txStmts) error { return fn(flowTx{tx}) })
}

// flowTx runs the statements in one transaction on the single writer connection, which
// serializes every write: a row read is still as read when the sequence writes it. The
// accept transaction's statements (txStmts) serve as well.
type flowTx struct{ tx txQuerier }

// oneDelivery reads one delivery, outbox.ErrNotFound when there is none.
func (t flowTx) oneDelivery(ctx context.Context, q string, arg any) (outbox.Delivery, error) {
	d, err := scanDelivery(t.tx.QueryRowContext(ctx, q, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return d, outbox.ErrNotFound
	}
	return d, err
}

func (t flowTx) FeedbackDeliveryByID(ctx context.Context, id uuid.UUID) (outbox.Delivery, error) {
	return t.oneDelivery(ctx, fq.FeedbackDeliveryByID, id.String())
}

func (t flowTx) FeedbackDeliveryByMessageID(ctx context.Context, messageID string) (outbox.Delivery, error) {
	return t.oneDelivery(ctx, fq.FeedbackDeliveryByMessageID, messageID)
}

func (t flowTx) ForgetReceipts(ctx context.Context, before time.Time) error {
	_, err := t.tx.ExecContext(ctx, fq.ForgetOldReceipts, micros(before))
	return err
}

// changed runs an INSERT or DELETE and says how many rows it touched.
func (t flowTx) changed(ctx context.Context, q string, args ...any) (int, error) {
	r, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

func (t flowTx) InsertReceipt(ctx context.Context, source, receiptID string, at time.Time) (bool, error) {
	n, err := t.changed(ctx, fq.InsertReceipt, source, receiptID, micros(at))
	return n > 0, err
}

func (t flowTx) InsertFeedback(ctx context.Context, deliveryID uuid.UUID, f outbox.Feedback) error {
	_, err := t.tx.ExecContext(ctx, fq.InsertFeedback, deliveryID.String(), f.Source, string(f.Kind), f.BounceType,
		f.Diagnostic, f.ProviderMessageID, f.ReceiptID, micros(f.OccurredAt), micros(f.ReceivedAt))
	return err
}

func (t flowTx) BounceDelivery(ctx context.Context, id uuid.UUID, lastError string, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, fq.BounceDelivery, lastError, micros(at), id.String())
	return err
}

func (t flowTx) InsertSuppression(ctx context.Context, sp outbox.Suppression) (bool, error) {
	n, err := t.changed(ctx, fq.InsertSuppression, sp.Address, sp.Reason, nullUUID(sp.DeliveryID), micros(sp.CreatedAt))
	return n > 0, err
}

func (t flowTx) DeleteSuppression(ctx context.Context, address string) (bool, error) {
	n, err := t.changed(ctx, fq.DeleteSuppression, address)
	return n > 0, err
}

func (t flowTx) InsertEvent(ctx context.Context, e outbox.Event) error {
	_, err := t.tx.ExecContext(ctx, fq.InsertEvent, e.Kind, nullUUID(e.SubmissionID), nullUUID(e.DeliveryID),
		string(e.Data), micros(e.At))
	return err
}

func (t flowTx) RetryTarget(ctx context.Context, deliveryID uuid.UUID) (storeflow.RetryTarget, error) {
	var (
		r             storeflow.RetryTarget
		status, subID string
	)
	err := t.tx.QueryRowContext(ctx, fq.ActRetryTarget, deliveryID.String()).Scan(&status, &r.Route, &subID, &r.Form)
	if errors.Is(err, sql.ErrNoRows) {
		return r, outbox.ErrNotFound
	}
	if err != nil {
		return r, err
	}
	r.Status = outbox.DeliveryStatus(status)
	r.SubmissionID, err = uuid.Parse(subID)
	return r, err
}

func (t flowTx) RetryDelivery(ctx context.Context, id uuid.UUID, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, fq.ActRetry, micros(now), id.String())
	return err
}

func (t flowTx) SubmissionTarget(ctx context.Context, id uuid.UUID) (storeflow.SubmissionTarget, error) {
	var (
		r      storeflow.SubmissionTarget
		status string
	)
	err := t.tx.QueryRowContext(ctx, fq.ActSubmissionTarget, id.String()).Scan(&r.Form, &status, &r.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return r, outbox.ErrNotFound
	}
	r.Status = outbox.SubmissionStatus(status)
	return r, err
}

func (t flowTx) AcceptSubmission(ctx context.Context, id uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, fq.ActRelease, id.String())
	return err
}

func (t flowTx) ReleaseDeliveries(ctx context.Context, submissionID uuid.UUID, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, fq.ActReleaseDeliveries, micros(now), submissionID.String())
	return err
}

func (t flowTx) DuePayloads(ctx context.Context, submissionID uuid.UUID) ([]storeflow.DeliveryPayload, error) {
	rows, err := t.tx.QueryContext(ctx, fq.ActDuePayloads, submissionID.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storeflow.DeliveryPayload
	for rows.Next() {
		var (
			id      string
			payload []byte
		)
		if err := rows.Scan(&id, &payload); err != nil {
			return nil, err
		}
		uid, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("delivery id %q: %w", id, err)
		}
		out = append(out, storeflow.DeliveryPayload{ID: uid, Payload: payload})
	}
	return out, rows.Err()
}

func (t flowTx) SetPayload(ctx context.Context, id uuid.UUID, payload []byte) error {
	_, err := t.tx.ExecContext(ctx, fq.ActSetPayload, id.String(), string(payload))
	return err
}

func (t flowTx) MarkSpam(ctx context.Context, id uuid.UUID, reason string) error {
	_, err := t.tx.ExecContext(ctx, fq.ActMarkSpam, reason, id.String())
	return err
}

func (t flowTx) SkipDeliveries(ctx context.Context, submissionID uuid.UUID, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, fq.ActSkipDeliveries, micros(now), submissionID.String())
	return err
}

func (t flowTx) EraseAutoreplies(ctx context.Context, submissionID uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, fq.EraseAutoreplies, submissionID.String())
	return err
}

func (t flowTx) DeleteSubmission(ctx context.Context, id uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, fq.ActErase, id.String())
	return err
}

func (t flowTx) SuppressionTarget(ctx context.Context, address string) (storeflow.SuppressionTarget, error) {
	var (
		r                        storeflow.SuppressionTarget
		deliveryID, submissionID string
	)
	err := t.tx.QueryRowContext(ctx, fq.ActUnsuppressTarget, address).Scan(&r.Reason, &deliveryID, &submissionID, &r.Form)
	if errors.Is(err, sql.ErrNoRows) {
		return r, outbox.ErrNotFound
	}
	if err != nil || deliveryID == "" {
		return r, err
	}
	if r.DeliveryID, err = uuid.Parse(deliveryID); err != nil {
		return r, err
	}
	r.SubmissionID, err = uuid.Parse(submissionID)
	return r, err
}

func (t flowTx) PruneSubmissions(ctx context.Context, before time.Time, batch int) (int, error) {
	return t.changed(ctx, fq.PruneSubmissions, micros(before), batch)
}

func (t flowTx) PruneEvents(ctx context.Context, before time.Time, batch int) (int, error) {
	return t.changed(ctx, fq.PruneEvents, micros(before), batch)
}

func nullUUID(id uuid.UUID) sql.NullString {
	if id == uuid.Nil {
		return sql.NullString{}
	}
	return sql.NullString{String: id.String(), Valid: true}
}

func (t flowTx) PruneAutoreplies(ctx context.Context, before time.Time, batch int) error {
	_, err := t.tx.ExecContext(ctx, fq.PruneAutoreplies, micros(before), batch)
	return err
}

var _ storeflow.Driver = flow{}

func (t flowTx) UseToken(ctx context.Context, id, contentHash string, expires time.Time) (string, error) {
	var first string
	err := t.tx.QueryRowContext(ctx, fq.UseToken, id, contentHash, micros(expires)).Scan(&first)
	return first, err
}

func (t flowTx) PruneUsedTokens(ctx context.Context, now time.Time, batch int) error {
	_, err := t.tx.ExecContext(ctx, fq.PruneUsedTokens, micros(now), batch)
	return err
}

// UseToken records a used spam token (outbox.TokenLedger).
func (s *Store) UseToken(ctx context.Context, id, contentHash string, expires time.Time) (bool, error) {
	return storeflow.UseToken(ctx, flow{s}, id, contentHash, expires)
}
