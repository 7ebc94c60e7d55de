package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

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
// the flowTx methods below. The single writer serializes it with every other write.
func (s *Store) RecordAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	return storeflow.RecordAlert(ctx, flow{s}, n)
}

func (t flowTx) InsertAlert(ctx context.Context, a outbox.Alert) (bool, error) {
	n, err := t.changed(ctx, qInsertAlert, a.ID.String(), a.Kind, a.Key, a.Form, a.Summary, a.Affected,
		a.Channel, a.Destination, a.Instance, micros(a.OpenedAt))
	return n > 0, err
}

func (t flowTx) RenotifyAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	c, err := t.changed(ctx, qRenotifyAlert, n.Alert.ID.String(), micros(n.Now), micros(n.NotifiedBefore),
		n.Alert.Summary, n.Alert.Affected)
	return c > 0, err
}

func (t flowTx) RefreshAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	c, err := t.changed(ctx, qRefreshAlert, n.Alert.ID.String(), n.Alert.Summary, n.Alert.Affected)
	return c > 0, err
}

func (t flowTx) ResolveAlert(ctx context.Context, n outbox.AlertNotice) (bool, error) {
	c, err := t.changed(ctx, qResolveAlert, n.Alert.ID.String(), micros(n.Now))
	return c > 0, err
}

func (t flowTx) InsertAlertSubmission(ctx context.Context, sub *outbox.Submission) error {
	_, err := t.tx.ExecContext(ctx, qInsertAlertSubmission, sub.ID.String(), sub.Form, string(sub.Status),
		string(sub.Data.AppendJSON(nil)), sub.Test, micros(sub.CreatedAt))
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
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	defer rows.Close()
	var out []outbox.Alert
	for rows.Next() {
		var (
			a                outbox.Alert
			id               string
			opened, notified int64
			resolved         sql.NullInt64
		)
		if err := rows.Scan(&id, &a.Kind, &a.Key, &a.Form, &a.Summary, &a.Affected, &a.Channel, &a.Destination,
			&a.Instance, &a.Notices, &opened, &notified, &resolved); err != nil {
			return nil, fmt.Errorf("list alerts: %w", err)
		}
		if a.ID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("list alerts: id: %w", err)
		}
		a.OpenedAt, a.NotifiedAt = fromMicros(opened), fromMicros(notified)
		if resolved.Valid {
			a.ResolvedAt = fromMicros(resolved.Int64)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return out, nil
}

// DeadDeliveryGroups implements outbox.AlertStore.
func (s *Store) DeadDeliveryGroups(ctx context.Context, except string) ([]outbox.DeadGroup, error) {
	rows, err := s.r.QueryContext(ctx, qDeadDeliveryGroups, except)
	if err != nil {
		return nil, fmt.Errorf("dead delivery groups: %w", err)
	}
	defer rows.Close()
	var out []outbox.DeadGroup
	for rows.Next() {
		var (
			g     outbox.DeadGroup
			ch    string
			since int64
		)
		if err := rows.Scan(&g.Form, &g.Route, &ch, &g.Submissions, &since); err != nil {
			return nil, fmt.Errorf("dead delivery groups: %w", err)
		}
		g.Channel, g.Since = outbox.Channel(ch), fromMicros(since)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dead delivery groups: %w", err)
	}
	return out, nil
}

// FeedbackCounts implements outbox.AlertStore.
func (s *Store) FeedbackCounts(ctx context.Context, since time.Time) (outbox.FeedbackCounts, error) {
	var c outbox.FeedbackCounts
	if err := s.r.QueryRowContext(ctx, qFeedbackCounts, micros(since)).Scan(&c.Delivered, &c.Bounced, &c.Complained, &c.Submissions); err != nil {
		return c, fmt.Errorf("feedback counts: %w", err)
	}
	return c, nil
}
