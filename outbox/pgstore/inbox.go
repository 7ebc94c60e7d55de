package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// SearchSubmissions pages through the inbox's submissions newest first with a keyset
// cursor (storeflow.SubmissionsPage). The search reads decoded field values
// (json_each_text), so it matches what the visitor typed, not the JSON escapes.
func (s *Store) SearchSubmissions(ctx context.Context, f outbox.InboxFilter) ([]outbox.Submission, string, error) {
	p, err := storeflow.SubmissionsPage(f)
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	sql, args := pageQuery(qSearchSubmissions, qSearchSubmissionsOrder, p)
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
	out, next := outbox.TrimPage(out, p.Limit, outbox.SubmissionCursor)
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

// Act applies one operator action and its audit event in one transaction
// (storeflow.Act); the row lock each target query takes (FOR UPDATE) serializes
// concurrent actions on one submission, delivery or address.
func (s *Store) Act(ctx context.Context, a outbox.Action) error {
	return storeflow.Act(ctx, flow{s}, a)
}

func nullID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
