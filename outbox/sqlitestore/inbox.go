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
		where, args = append(where, qSearchStatusIs), append(args, string(f.Status))
	}
	switch f.Delivery {
	case "":
	case outbox.DeliveryStateDead:
		where = append(where, qSearchDeliveryDead)
	case outbox.DeliveryStatePending:
		where = append(where, qSearchDeliveryPending)
	default:
		return nil, "", fmt.Errorf("search submissions: unknown delivery state %q", f.Delivery)
	}
	if !f.Since.IsZero() {
		where, args = append(where, qSearchSince), append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, qSearchUntil), append(args, micros(f.Until))
	}
	if f.Search != "" {
		if outbox.RawSearchable(f.Search) {
			where, args = append(where, qSearchRawText), append(args, outbox.LikePattern(f.Search))
		}
		where = append(where, qSearchFieldValue)
		args = append(args, outbox.LikePattern(f.Search))
	}
	if !cur.IsZero() {
		where = append(where, qSearchBeforeCursor)
		args = append(args, micros(cur.At), micros(cur.At), cur.ID.String())
	}
	q := buildQuery(qSearchSubmissions, where, qSearchSubmissionsOrder)
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

// SubmissionForms lists the forms with one index seek per form (queries/inbox.sql).
func (s *Store) SubmissionForms(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, qSubmissionForms)
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
	rows, err := s.r.QueryContext(ctx, qOverviewSubmissions+formCond+" "+qOverviewSubmissionsGroup,
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
	drows, err := s.r.QueryContext(ctx, qOverviewDeliveries+formCond+" "+qOverviewDeliveriesGroup, formArgs...)
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
	rows, err := s.r.QueryContext(ctx, qSubmissionEvents, id.String())
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
		_, err = tx.ExecContext(ctx, qInsertEvent, ev.Kind, nullUUID(ev.SubmissionID), nullUUID(ev.DeliveryID),
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
		err := tx.QueryRowContext(ctx, qActRetryTarget, a.DeliveryID.String()).Scan(&status, &route, &subID, &form)
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
		if _, err := tx.ExecContext(ctx, qActRetry, now, a.DeliveryID.String()); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, route, status, "")
	}
	var form, status, reason string
	err := tx.QueryRowContext(ctx, qActSubmissionTarget, a.SubmissionID.String()).Scan(&form, &status, &reason)
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
		if _, err := tx.ExecContext(ctx, qActRelease, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.ExecContext(ctx, qActReleaseDeliveries, now, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, reason)
	case outbox.ActionMarkSpam:
		if status != string(outbox.SubmissionAccepted) {
			return outbox.Event{}, outbox.ErrNotSpammable
		}
		if _, err := tx.ExecContext(ctx, qActMarkSpam, outbox.ReasonOperator, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.ExecContext(ctx, qActSkipDeliveries, now, id); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, "")
	case outbox.ActionErase:
		if _, err := tx.ExecContext(ctx, qActErase, id); err != nil {
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
	err := tx.QueryRowContext(ctx, qActUnsuppressTarget, a.Address).Scan(&reason, &deliveryID, &submissionID, &form)
	if errors.Is(err, sql.ErrNoRows) {
		return outbox.Event{}, outbox.ErrNotFound
	}
	if err != nil {
		return outbox.Event{}, err
	}
	if _, err := tx.ExecContext(ctx, qDeleteSuppression, a.Address); err != nil {
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

// formIn is FormIn (queries/inbox.sql) for forms (not empty), one placeholder each, and
// its arguments.
func formIn(forms []string) (string, []any) {
	args := make([]any, len(forms))
	for i, f := range forms {
		args[i] = f
	}
	return strings.Replace(qFormIn, "(?)", "("+strings.TrimSuffix(strings.Repeat("?, ", len(forms)), ", ")+")", 1), args
}

// buildQuery is head, then the conditions joined by AND (when there are any), then tail.
func buildQuery(head string, conds []string, tail string) string {
	q := head
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return q + " " + tail
}
