package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// SearchSubmissions pages through the inbox's submissions newest first with a keyset
// cursor. The search reads decoded field values through json_each, so a value stored
// with JSON escapes (\u003c for <) is still found by what the visitor typed.
func (s *Store) SearchSubmissions(ctx context.Context, f outbox.InboxFilter) ([]outbox.Submission, string, error) {
	cur, err := outbox.ParseCursor(f.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	limit := outbox.PageLimit(f.Limit)
	var (
		where []string
		args  []any
	)
	if len(f.Forms) > 0 {
		cond, formArgs := formIn(f.Forms)
		where, args = append(where, cond), append(args, formArgs...)
	}
	if f.Status != "" {
		where, args = append(where, "s.status = ?"), append(args, string(f.Status))
	}
	// Unfinished deliveries are few and the status index finds them, so the
	// membership test reads that small set rather than every submission's deliveries.
	switch f.Delivery {
	case "":
	case outbox.DeliveryStateDead:
		where = append(where, "s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status = 'dead')")
	case outbox.DeliveryStatePending:
		where = append(where, "s.id IN (SELECT d.submission_id FROM deliveries d WHERE d.status IN ('pending', 'failed', 'sending'))")
	default:
		return nil, "", fmt.Errorf("search submissions: unknown delivery state %q", f.Delivery)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "s.created_at >= ?"), append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, "s.created_at < ?"), append(args, micros(f.Until))
	}
	if f.Search != "" {
		// The LIKE over the stored text reads no JSON, several times cheaper per row than
		// json_each, and leaves the exact test below only the few rows it passes.
		if outbox.RawSearchable(f.Search) {
			where, args = append(where, `s.data LIKE ? ESCAPE '\'`), append(args, outbox.LikePattern(f.Search))
		}
		where = append(where, `EXISTS (SELECT 1 FROM json_each(s.data) j WHERE j.value LIKE ? ESCAPE '\')`)
		args = append(args, outbox.LikePattern(f.Search))
	}
	if !cur.IsZero() {
		// The range comes first and alone: written as one OR, SQLite plans it as two index
		// searches merged and sorted, reading every row older than the cursor (1.6 s at
		// page 101 of a million rows); as a range plus a filter it reads one page.
		where = append(where, "s.created_at <= ? AND (s.created_at < ? OR s.id < ?)")
		args = append(args, micros(cur.At), micros(cur.At), cur.ID.String())
	}
	q := `SELECT s.` + strings.ReplaceAll(submissionColumns, ", ", ", s.") + ` FROM submissions s`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY s.created_at DESC, s.id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	defer rows.Close()
	var out []outbox.Submission
	for rows.Next() {
		sub, err := scanSubmission(rows)
		if err != nil {
			return nil, "", fmt.Errorf("search submissions: %w", err)
		}
		out = append(out, *sub)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	out, next := outbox.TrimPage(out, limit, outbox.SubmissionCursor)
	return out, next, nil
}

// SubmissionForms runs outbox.SubmissionFormsQuery: one index seek per form.
func (s *Store) SubmissionForms(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, outbox.SubmissionFormsQuery)
	if err != nil {
		return nil, fmt.Errorf("submission forms: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var form string
		if err := rows.Scan(&form); err != nil {
			return nil, fmt.Errorf("submission forms: %w", err)
		}
		out = append(out, form)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("submission forms: %w", err)
	}
	return out, nil
}

// Overview counts submissions per form and status, and unfinished deliveries per form
// (the status index narrows those to the few rows not sent or skipped).
func (s *Store) Overview(ctx context.Context, forms []string, dayStart, weekStart time.Time) (outbox.Overview, error) {
	var ov outbox.Overview
	formCond, formArgs := "", []any{}
	if len(forms) > 0 {
		formCond, formArgs = formIn(forms)
		formCond = " AND " + formCond
	}
	rows, err := s.r.QueryContext(ctx, `SELECT s.form, s.status, s.test,
			SUM(s.created_at >= ?), SUM(s.created_at >= ?), COUNT(*)
		FROM submissions s WHERE 1 = 1`+formCond+`
		GROUP BY s.form, s.status, s.test ORDER BY s.form, s.status, s.test`,
		append([]any{micros(dayStart), micros(weekStart)}, formArgs...)...)
	if err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c outbox.FormCount
		var status string
		if err := rows.Scan(&c.Form, &status, &c.Test, &c.Today, &c.Week, &c.All); err != nil {
			return ov, fmt.Errorf("overview: %w", err)
		}
		c.Status = outbox.SubmissionStatus(status)
		ov.Submissions = append(ov.Submissions, c)
	}
	if err := rows.Err(); err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	drows, err := s.r.QueryContext(ctx, `SELECT s.form, d.status, COUNT(*)
		FROM deliveries d JOIN submissions s ON s.id = d.submission_id
		WHERE d.status IN ('pending', 'sending', 'failed', 'dead')`+formCond+`
		GROUP BY s.form, d.status ORDER BY s.form, d.status`, formArgs...)
	if err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	defer drows.Close()
	for drows.Next() {
		var c outbox.FormDeliveries
		var status string
		if err := drows.Scan(&c.Form, &status, &c.Count); err != nil {
			return ov, fmt.Errorf("overview: %w", err)
		}
		c.Status = outbox.DeliveryStatus(status)
		ov.Deliveries = append(ov.Deliveries, c)
	}
	if err := drows.Err(); err != nil {
		return ov, fmt.Errorf("overview: %w", err)
	}
	return ov, nil
}

// SubmissionEvents reads the events_submission index.
func (s *Store) SubmissionEvents(ctx context.Context, id uuid.UUID) ([]outbox.Event, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, kind, submission_id, delivery_id, data, at FROM events
		WHERE submission_id = ? ORDER BY id`, id.String())
	if err != nil {
		return nil, fmt.Errorf("submission events: %w", err)
	}
	defer rows.Close()
	out, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("submission events: %w", err)
	}
	return out, nil
}

// Act applies one operator action and its audit event on the writer connection, in one
// transaction.
func (s *Store) Act(ctx context.Context, a outbox.Action) error {
	a.Now = orNow(a.Now)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		ev, err := s.act(ctx, tx, &a)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO events (kind, submission_id, delivery_id, data, at)
			VALUES (?, ?, ?, ?, ?)`, ev.Kind, nullUUID(ev.SubmissionID), nullUUID(ev.DeliveryID),
			string(ev.Data), micros(ev.At))
		return err
	})
	if err != nil {
		return fmt.Errorf("%s %s%s: %w", a.Kind, a.SubmissionID, a.DeliveryID, err)
	}
	if a.Kind == outbox.ActionErase {
		// secure_delete zeroed the rows' pages, but the WAL still holds the frames written
		// before; scrubWAL (erase.go) checkpoints them into the file and truncates it.
		if err := s.scrubWAL(ctx); err != nil {
			return fmt.Errorf("%s %s: the rows are deleted, but %w", a.Kind, a.SubmissionID, err)
		}
	}
	return nil
}

func (s *Store) act(ctx context.Context, tx *sql.Tx, a *outbox.Action) (outbox.Event, error) {
	now := micros(a.Now)
	if a.Kind == outbox.ActionUnsuppress {
		return unsuppress(ctx, tx, a)
	}
	if a.Kind == outbox.ActionRetry {
		var status, route, subID, form string
		err := tx.QueryRowContext(ctx, `SELECT d.status, d.route, d.submission_id, s.form
			FROM deliveries d JOIN submissions s ON s.id = d.submission_id WHERE d.id = ?`,
			a.DeliveryID.String()).Scan(&status, &route, &subID, &form)
		if errors.Is(err, sql.ErrNoRows) {
			return outbox.Event{}, outbox.ErrNotFound
		}
		if err != nil {
			return outbox.Event{}, err
		}
		if status != string(outbox.DeliveryDead) && status != string(outbox.DeliveryFailed) {
			return outbox.Event{}, outbox.ErrNotRetryable
		}
		if a.SubmissionID, err = uuid.Parse(subID); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0,
			next_attempt_at = ?1, updated_at = ?1 WHERE id = ?2`, now, a.DeliveryID.String()); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, route, status, "")
	}
	var form, status, reason string
	err := tx.QueryRowContext(ctx, `SELECT form, status, reason FROM submissions WHERE id = ?`,
		a.SubmissionID.String()).Scan(&form, &status, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.Event{}, outbox.ErrNotFound
	}
	if err != nil {
		return outbox.Event{}, err
	}
	id := a.SubmissionID.String()
	switch a.Kind {
	case outbox.ActionRelease:
		if status != string(outbox.SubmissionQuarantined) && status != string(outbox.SubmissionSpam) {
			return outbox.Event{}, outbox.ErrNotReleasable
		}
		if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = 'accepted', reason = '' WHERE id = ?`, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0,
				next_attempt_at = ?1, updated_at = ?1
			WHERE submission_id = ?2 AND status = 'skipped'`, now, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, reason)
	case outbox.ActionMarkSpam:
		if status != string(outbox.SubmissionAccepted) {
			return outbox.Event{}, outbox.ErrNotSpammable
		}
		if _, err := tx.ExecContext(ctx, `UPDATE submissions SET status = 'spam', reason = ? WHERE id = ?`,
			outbox.ReasonOperator, id); err != nil {
			return outbox.Event{}, err
		}
		// A leased delivery is the worker's until its fenced write; the rest never goes.
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'skipped', updated_at = ?1
			WHERE submission_id = ?2 AND status IN ('pending', 'failed', 'dead')`, now, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, "")
	case outbox.ActionErase:
		if _, err := tx.ExecContext(ctx, qEraseAutoreplies, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM submissions WHERE id = ?`, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", "", "")
	}
	return outbox.Event{}, fmt.Errorf("unknown action %q", a.Kind)
}

// unsuppress takes a.Address off the suppression list. Its event is about the delivery
// whose bounce or complaint listed the address, when that is still stored, so the removal
// also shows in that submission's history.
func unsuppress(ctx context.Context, tx *sql.Tx, a *outbox.Action) (outbox.Event, error) {
	a.Address = outbox.NormalizeAddress(a.Address)
	var reason, deliveryID, submissionID, form string
	err := tx.QueryRowContext(ctx, `SELECT sp.reason, COALESCE(d.id, ''), COALESCE(d.submission_id, ''),
			COALESCE(s.form, '')
		FROM suppressions sp LEFT JOIN deliveries d ON d.id = sp.delivery_id
		LEFT JOIN submissions s ON s.id = d.submission_id WHERE sp.address = ?`,
		a.Address).Scan(&reason, &deliveryID, &submissionID, &form)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.Event{}, outbox.ErrNotFound
	}
	if err != nil {
		return outbox.Event{}, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM suppressions WHERE address = ?`, a.Address); err != nil {
		return outbox.Event{}, err
	}
	if deliveryID != "" {
		if a.DeliveryID, err = uuid.Parse(deliveryID); err != nil {
			return outbox.Event{}, err
		}
		if a.SubmissionID, err = uuid.Parse(submissionID); err != nil {
			return outbox.Event{}, err
		}
	}
	return outbox.ActionEvent(*a, form, "", "", reason)
}

func nullUUID(id uuid.UUID) sql.NullString {
	if id == uuid.Nil {
		return sql.NullString{}
	}
	return sql.NullString{String: id.String(), Valid: true}
}

// formIn is the condition "s.form is one of forms" (forms not empty) and its arguments:
// SQLite has no array parameter, so each form is its own placeholder.
func formIn(forms []string) (string, []any) {
	args := make([]any, len(forms))
	for i, f := range forms {
		args[i] = f
	}
	return "s.form IN (" + strings.TrimSuffix(strings.Repeat("?,", len(forms)), ",") + ")", args
}
