package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// SearchSubmissions pages through the inbox's submissions newest first with a keyset
// cursor. The search reads decoded field values (json_each_text), so it matches what the
// visitor typed, not the JSON escapes.
func (s *Store) SearchSubmissions(ctx context.Context, f outbox.InboxFilter) ([]outbox.Submission, string, error) {
	cur, err := outbox.ParseCursor(f.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	limit := outbox.PageLimit(f.Limit)
	var q query
	if len(f.Forms) > 0 {
		q.where("s.form = ANY($?)", f.Forms)
	}
	if f.Status != "" {
		q.where("s.status = $?", string(f.Status))
	}
	// Unfinished deliveries are few and the status index finds them, so the
	// membership test reads that small set rather than every submission's deliveries.
	switch f.Delivery {
	case "":
	case outbox.DeliveryStateDead:
		q.where("s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status = 'dead')")
	case outbox.DeliveryStatePending:
		q.where("s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status IN ('pending', 'failed', 'sending'))")
	default:
		return nil, "", fmt.Errorf("search submissions: unknown delivery state %q", f.Delivery)
	}
	if !f.Since.IsZero() {
		q.where("s.created_at >= $?", f.Since)
	}
	if !f.Until.IsZero() {
		q.where("s.created_at < $?", f.Until)
	}
	if f.Search != "" {
		// ILIKE folds more than ASCII case; the contract promises only ASCII.
		// The ILIKE over the stored text (json is kept as text) parses no JSON, several
		// times cheaper per row, and leaves the exact test below only the rows it passes.
		if outbox.RawSearchable(f.Search) {
			q.where(`s.data::text ILIKE $? ESCAPE '\'`, outbox.LikePattern(f.Search))
		}
		q.where(`EXISTS (SELECT 1 FROM json_each_text(s.data) j WHERE j.value ILIKE $? ESCAPE '\')`, outbox.LikePattern(f.Search))
	}
	if !cur.IsZero() {
		q.where("(s.created_at, s.id) < ($?, $?)", cur.At, cur.ID)
	}
	sql, args := q.build(`SELECT s.id, s.form, s.status, s.reason, s.data, s.meta, s.idempotency_key,
		s.content_hash, s.test, s.created_at FROM submissions s`, `ORDER BY s.created_at DESC, s.id DESC`, limit+1)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Submission, error) {
		sub, err := scanSubmission(r)
		if err != nil {
			return outbox.Submission{}, err
		}
		return *sub, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	out, next := outbox.TrimPage(out, limit, outbox.SubmissionCursor)
	return out, next, nil
}

// SubmissionForms runs outbox.SubmissionFormsQuery: one index seek per form.
func (s *Store) SubmissionForms(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, outbox.SubmissionFormsQuery)
	if err != nil {
		return nil, fmt.Errorf("submission forms: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("submission forms: %w", err)
	}
	return out, nil
}

// Overview counts submissions per form and status, and unfinished deliveries per form
// (the status index narrows those to the few rows not sent or skipped).
func (s *Store) Overview(ctx context.Context, forms []string, dayStart, weekStart time.Time) (outbox.Overview, error) {
	var ov outbox.Overview
	var formsArg []string // nil: every form
	if len(forms) > 0 {
		formsArg = forms
	}
	rows, err := s.pool.Query(ctx, `SELECT form, status, test,
			COUNT(*) FILTER (WHERE created_at >= $1), COUNT(*) FILTER (WHERE created_at >= $2), COUNT(*)
		FROM submissions WHERE $3::text[] IS NULL OR form = ANY($3)
		GROUP BY form, status, test ORDER BY form, status, test`, dayStart, weekStart, formsArg)
	if err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	ov.Submissions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.FormCount, error) {
		var c outbox.FormCount
		var status string
		err := r.Scan(&c.Form, &status, &c.Test, &c.Today, &c.Week, &c.All)
		c.Status = outbox.SubmissionStatus(status)
		return c, err
	})
	if err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	rows, err = s.pool.Query(ctx, `SELECT s.form, d.status, COUNT(*)
		FROM deliveries d JOIN submissions s ON s.id = d.submission_id
		WHERE d.status IN ('pending', 'sending', 'failed', 'dead') AND ($1::text[] IS NULL OR s.form = ANY($1))
		GROUP BY s.form, d.status ORDER BY s.form, d.status`, formsArg)
	if err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	ov.Deliveries, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.FormDeliveries, error) {
		var c outbox.FormDeliveries
		var status string
		err := r.Scan(&c.Form, &status, &c.Count)
		c.Status = outbox.DeliveryStatus(status)
		return c, err
	})
	if err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	return ov, nil
}

// SubmissionEvents reads the events_submission index.
func (s *Store) SubmissionEvents(ctx context.Context, id uuid.UUID) ([]outbox.Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, kind, submission_id, delivery_id, data, at FROM events
		WHERE submission_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("submission events: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("submission events: %w", err)
	}
	return out, nil
}

// Act applies one operator action and its audit event in one transaction; the row lock
// taken by SELECT ... FOR UPDATE serializes concurrent actions on one submission or
// delivery.
func (s *Store) Act(ctx context.Context, a outbox.Action) error {
	a.Now = orNow(a.Now)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		ev, err := act(ctx, tx, &a)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
			VALUES ($1, $2, $3, $4, $5)`, ev.Kind, nullID(ev.SubmissionID), nullID(ev.DeliveryID),
			string(ev.Data), ev.At)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s%s: %w", a.Kind, a.SubmissionID, a.DeliveryID, err)
	}
	return nil
}

func act(ctx context.Context, tx pgx.Tx, a *outbox.Action) (outbox.Event, error) {
	if a.Kind == outbox.ActionUnsuppress {
		return unsuppress(ctx, tx, a)
	}
	if a.Kind == outbox.ActionRetry {
		var status, route, form string
		err := tx.QueryRow(ctx, `SELECT d.status, d.route, d.submission_id, s.form
			FROM deliveries d JOIN submissions s ON s.id = d.submission_id WHERE d.id = $1 FOR UPDATE OF d`,
			a.DeliveryID).Scan(&status, &route, &a.SubmissionID, &form)
		if isNoRows(err) {
			return outbox.Event{}, outbox.ErrNotFound
		}
		if err != nil {
			return outbox.Event{}, err
		}
		if status != string(outbox.DeliveryDead) && status != string(outbox.DeliveryFailed) {
			return outbox.Event{}, outbox.ErrNotRetryable
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0,
			next_attempt_at = $2, updated_at = $2 WHERE id = $1`, a.DeliveryID, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, route, status, "")
	}
	var form, status, reason string
	err := tx.QueryRow(ctx, `SELECT form, status, reason FROM submissions WHERE id = $1 FOR UPDATE`,
		a.SubmissionID).Scan(&form, &status, &reason)
	if isNoRows(err) {
		return outbox.Event{}, outbox.ErrNotFound
	}
	if err != nil {
		return outbox.Event{}, err
	}
	id := a.SubmissionID
	switch a.Kind {
	case outbox.ActionRelease:
		if status != string(outbox.SubmissionQuarantined) && status != string(outbox.SubmissionSpam) {
			return outbox.Event{}, outbox.ErrNotReleasable
		}
		if _, err := tx.Exec(ctx, `UPDATE submissions SET status = 'accepted', reason = '' WHERE id = $1`, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0,
				next_attempt_at = $2, updated_at = $2
			WHERE submission_id = $1 AND status = 'skipped'`, id, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, reason)
	case outbox.ActionMarkSpam:
		if status != string(outbox.SubmissionAccepted) {
			return outbox.Event{}, outbox.ErrNotSpammable
		}
		if _, err := tx.Exec(ctx, `UPDATE submissions SET status = 'spam', reason = $2 WHERE id = $1`,
			id, outbox.ReasonOperator); err != nil {
			return outbox.Event{}, err
		}
		// A leased delivery is the worker's until its fenced write; the rest never goes.
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'skipped', updated_at = $2
			WHERE submission_id = $1 AND status IN ('pending', 'failed', 'dead')`, id, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, "")
	case outbox.ActionErase:
		if _, err := tx.Exec(ctx, qEraseAutoreplies, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM submissions WHERE id = $1`, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", "", "")
	}
	return outbox.Event{}, fmt.Errorf("unknown action %q", a.Kind)
}

// unsuppress takes a.Address off the suppression list; FOR UPDATE makes a second,
// concurrent removal find nothing. Its event is about the delivery whose bounce or
// complaint listed the address, when that is still stored, so the removal also shows in
// that submission's history.
func unsuppress(ctx context.Context, tx pgx.Tx, a *outbox.Action) (outbox.Event, error) {
	a.Address = outbox.NormalizeAddress(a.Address)
	var reason, form string
	var deliveryID, submissionID *uuid.UUID
	err := tx.QueryRow(ctx, `SELECT sp.reason, d.id, d.submission_id, COALESCE(s.form, '')
		FROM suppressions sp LEFT JOIN deliveries d ON d.id = sp.delivery_id
		LEFT JOIN submissions s ON s.id = d.submission_id WHERE sp.address = $1 FOR UPDATE OF sp`,
		a.Address).Scan(&reason, &deliveryID, &submissionID, &form)
	if isNoRows(err) {
		return outbox.Event{}, outbox.ErrNotFound
	}
	if err != nil {
		return outbox.Event{}, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM suppressions WHERE address = $1`, a.Address); err != nil {
		return outbox.Event{}, err
	}
	if deliveryID != nil && submissionID != nil {
		a.DeliveryID, a.SubmissionID = *deliveryID, *submissionID
	}
	return outbox.ActionEvent(*a, form, "", "", reason)
}

func nullID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
