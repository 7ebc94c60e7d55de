package sqlitestore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// SearchSubmissions pages through the inbox's submissions newest first with a keyset
// cursor (storeflow.SubmissionsPage). The search reads decoded field values through json_each, so a value stored
// with JSON escapes (\u003c for <) is still found by what the visitor typed.
func (s *Store) SearchSubmissions(ctx context.Context, f outbox.InboxFilter) ([]outbox.Submission, string, error) {
	p, err := storeflow.SubmissionsPage(f)
	if err != nil {
		return nil, "", fmt.Errorf("search submissions: %w", err)
	}
	q, args := pageQuery(qSearchSubmissions, qSearchSubmissionsOrder, p)
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
	out, next := outbox.TrimPage(out, p.Limit, outbox.SubmissionCursor)
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
// transaction (storeflow.Act).
func (s *Store) Act(ctx context.Context, a outbox.Action) error {
	if err := storeflow.Act(ctx, flow{s}, a); err != nil {
		return err
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

// formIn is FormIn (queries/inbox.sql) for forms (not empty), one placeholder each, and
// its arguments.
func formIn(forms []string) (string, []any) {
	args := make([]any, len(forms))
	for i, f := range forms {
		args[i] = f
	}
	return strings.Replace(pageFragments["FormIn"], "(?)", "("+strings.TrimSuffix(strings.Repeat("?, ", len(forms)), ", ")+")", 1), args
}

// pageQuery is head, p's conditions (their fragments, storeflow.PageFragments) and tail,
// which ends in the LIMIT, with the arguments in SQLite's encoding: times as Unix
// microseconds, ids as text, a form list one placeholder per form (formIn), and a
// cursor's time twice, as its fragments compare it twice.
func pageQuery(head, tail string, p storeflow.Page) (string, []any) {
	conds := make([]string, 0, len(p.Conds))
	var args []any
	for _, c := range p.Conds {
		switch c.Name {
		case "FormIn":
			cond, fargs := formIn(c.Args[0].([]string))
			conds, args = append(conds, cond), append(args, fargs...)
			continue
		case "SearchBeforeCursor", "DeliveryBeforeCursor":
			c.Args = []any{c.Args[0], c.Args[0], c.Args[1]}
		}
		conds = append(conds, pageFragments[c.Name])
		for _, a := range c.Args {
			switch v := a.(type) {
			case time.Time:
				a = micros(v)
			case uuid.UUID:
				a = v.String()
			}
			args = append(args, a)
		}
	}
	q := head
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	return q + " " + tail, append(args, p.Fetch)
}
