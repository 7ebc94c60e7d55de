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
		q.where(qSearchFormIn, f.Forms)
	}
	if f.Status != "" {
		q.where(qSearchStatusIs, string(f.Status))
	}
	switch f.Delivery {
	case "":
	case outbox.DeliveryStateDead:
		q.where(qSearchDeliveryDead)
	case outbox.DeliveryStatePending:
		q.where(qSearchDeliveryPending)
	default:
		return nil, "", fmt.Errorf("search submissions: unknown delivery state %q", f.Delivery)
	}
	if !f.Since.IsZero() {
		q.where(qSearchSince, f.Since)
	}
	if !f.Until.IsZero() {
		q.where(qSearchUntil, f.Until)
	}
	if f.Search != "" {
		if outbox.RawSearchable(f.Search) {
			q.where(qSearchRawText, outbox.LikePattern(f.Search))
		}
		q.where(qSearchFieldValue, outbox.LikePattern(f.Search))
	}
	if !cur.IsZero() {
		q.where(qSearchBeforeCursor, cur.At, cur.ID)
	}
	sql, args := q.build(qSearchSubmissions, qSearchSubmissionsOrder, limit+1)
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

// SubmissionForms lists the forms with one index seek per form (queries/inbox.sql).
func (s *Store) SubmissionForms(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, qSubmissionForms)
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
	rows, err := s.pool.Query(ctx, qOverviewSubmissions, dayStart, weekStart, formsArg)
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
	rows, err = s.pool.Query(ctx, qOverviewDeliveries, formsArg)
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
	rows, err := s.pool.Query(ctx, qSubmissionEvents, id)
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
		_, err = tx.Exec(ctx, qInsertEvent, ev.Kind, nullID(ev.SubmissionID), nullID(ev.DeliveryID),
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
		err := tx.QueryRow(ctx, qActRetryTarget, a.DeliveryID).Scan(&status, &route, &a.SubmissionID, &form)
		if isNoRows(err) {
			return outbox.Event{}, outbox.ErrNotFound
		}
		if err != nil {
			return outbox.Event{}, err
		}
		if status != string(outbox.DeliveryDead) && status != string(outbox.DeliveryFailed) {
			return outbox.Event{}, outbox.ErrNotRetryable
		}
		if _, err := tx.Exec(ctx, qActRetry, a.DeliveryID, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, route, status, "")
	}
	var form, status, reason string
	err := tx.QueryRow(ctx, qActSubmissionTarget, a.SubmissionID).Scan(&form, &status, &reason)
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
		if _, err := tx.Exec(ctx, qActRelease, id); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.Exec(ctx, qActReleaseDeliveries, id, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, reason)
	case outbox.ActionMarkSpam:
		if status != string(outbox.SubmissionAccepted) {
			return outbox.Event{}, outbox.ErrNotSpammable
		}
		if _, err := tx.Exec(ctx, qActMarkSpam, id, outbox.ReasonOperator); err != nil {
			return outbox.Event{}, err
		}
		if _, err := tx.Exec(ctx, qActSkipDeliveries, id, a.Now); err != nil {
			return outbox.Event{}, err
		}
		return outbox.ActionEvent(*a, form, "", status, "")
	case outbox.ActionErase:
		if _, err := tx.Exec(ctx, qActErase, id); err != nil {
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
	err := tx.QueryRow(ctx, qActUnsuppressTarget, a.Address).Scan(&reason, &deliveryID, &submissionID, &form)
	if isNoRows(err) {
		return outbox.Event{}, outbox.ErrNotFound
	}
	if err != nil {
		return outbox.Event{}, err
	}
	if _, err := tx.Exec(ctx, qDeleteSuppression, a.Address); err != nil {
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
