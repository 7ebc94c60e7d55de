package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

var (
	qInsertAlert           = queries.Must("InsertAlert")
	qRenotifyAlert         = queries.Must("RenotifyAlert")
	qResolveAlert          = queries.Must("ResolveAlert")
	qRefreshAlert          = queries.Must("RefreshAlert")
	qInsertAlertSubmission = queries.Must("InsertAlertSubmission")
	qListOpenAlerts        = queries.Must("ListOpenAlerts")
	qListResolvedAlerts    = queries.Must("ListResolvedAlerts")
	qDeadDeliveryGroups    = queries.Must("DeadDeliveryGroups")
	qFeedbackCounts        = queries.Must("FeedbackCounts")

	_ outbox.AlertStore = (*Store)(nil)
)

// RecordAlert implements outbox.AlertStore; storeflow.RecordAlert runs its steps over
// the flowTx methods below.
func (s *Store) RecordAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	return storeflow.RecordAlert(ctx, flow{s}, n)
}

func (t flowTx) InsertAlert(ctx context.Context, a outbox.Alert) (bool, error) {
	tag, err := t.tx.Exec(ctx, qInsertAlert, [16]byte(a.ID), a.Kind, a.Key, a.Form, a.Summary, a.Affected,
		a.Channel, a.Destination, a.Instance, a.OpenedAt)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) RenotifyAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	tag, err := t.tx.Exec(ctx, qRenotifyAlert, [16]byte(n.Alert.ID), n.Now, n.NotifiedBefore, n.Alert.Summary, n.Alert.Affected)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) RefreshAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	tag, err := t.tx.Exec(ctx, qRefreshAlert, [16]byte(n.Alert.ID), n.Alert.Summary, n.Alert.Affected)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) ResolveAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	tag, err := t.tx.Exec(ctx, qResolveAlert, [16]byte(n.Alert.ID), n.Now)
	return tag.RowsAffected() > 0, err
}

func (t flowTx) InsertAlertSubmission(ctx context.Context, sub *outbox.Submission) error {
	_, err := t.tx.Exec(ctx, qInsertAlertSubmission, [16]byte(sub.ID), sub.Form, string(sub.Status),
		string(sub.Data.AppendJSON(nil)), sub.Test, sub.CreatedAt)
	return err
}

// ListAlerts implements outbox.AlertStore.
func (s *Store) ListAlerts(ctx context.Context, resolved int) ([]outbox.Alert, error) {
	out, err := s.alerts(ctx, qListOpenAlerts)
	if err != nil || resolved <= 0 {
		return out, err
	}
	done, err := s.alerts(ctx, qListResolvedAlerts, resolved)
	return append(out, done...), err
}

func (s *Store) alerts(ctx context.Context, q string, args ...any) ([]outbox.Alert, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Alert, error) {
		var (
			a        outbox.Alert
			resolved *time.Time
		)
		err := r.Scan(&a.ID, &a.Kind, &a.Key, &a.Form, &a.Summary, &a.Affected, &a.Channel, &a.Destination,
			&a.Instance, &a.Notices, &a.OpenedAt, &a.NotifiedAt, &resolved)
		a.OpenedAt, a.NotifiedAt = a.OpenedAt.UTC(), a.NotifiedAt.UTC()
		if resolved != nil {
			a.ResolvedAt = resolved.UTC()
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return out, nil
}

// DeadDeliveryGroups implements outbox.AlertStore.
func (s *Store) DeadDeliveryGroups(ctx context.Context, except string) ([]outbox.DeadGroup, error) {
	rows, err := s.pool.Query(ctx, qDeadDeliveryGroups, except)
	if err != nil {
		return nil, fmt.Errorf("dead delivery groups: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.DeadGroup, error) {
		var (
			g  outbox.DeadGroup
			ch string
		)
		err := r.Scan(&g.Form, &g.Route, &ch, &g.Submissions, &g.Since)
		g.Channel, g.Since = outbox.Channel(ch), g.Since.UTC()
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("dead delivery groups: %w", err)
	}
	return out, nil
}

// FeedbackCounts implements outbox.AlertStore.
func (s *Store) FeedbackCounts(ctx context.Context, since time.Time) (outbox.FeedbackCounts, error) {
	var c outbox.FeedbackCounts
	if err := s.pool.QueryRow(ctx, qFeedbackCounts, since).Scan(&c.Delivered, &c.Bounced, &c.Complained, &c.Submissions); err != nil {
		return c, fmt.Errorf("feedback counts: %w", err)
	}
	return c, nil
}
