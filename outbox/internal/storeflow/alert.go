package storeflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// AlertTx is the part of Tx that records alert notices (queries/alert.sql). Each write
// is conditional, and says whether it wrote: the condition is the decision the notice
// was made on (docs/design.md, "Alerts").
type AlertTx interface {
	// InsertAlert opens a; false when an alert of its (kind, key) is open (the partial
	// unique index of migrations alerts_open, ON CONFLICT DO NOTHING).
	InsertAlert(ctx context.Context, a outbox.Alert) (bool, error)
	// RenotifyAlert records a "still happening" notice of the open alert a.ID: notices
	// + 1, notified_at, summary and affected; false when it is not open or was notified
	// after notifiedBefore.
	RenotifyAlert(ctx context.Context, n outbox.AlertNotice) (bool, error)
	// RefreshAlert updates the summary and affected count of the open alert a.ID; false
	// when it is not open.
	RefreshAlert(ctx context.Context, n outbox.AlertNotice) (bool, error)
	// ResolveAlert resolves the open alert a.ID; false when it is not open.
	ResolveAlert(ctx context.Context, n outbox.AlertNotice) (bool, error)
	// InsertAlertSubmission stores a notice's system submission (form outbox.AlertsForm).
	InsertAlertSubmission(ctx context.Context, sub *outbox.Submission) error
}

// errAlertDecided rolls the transaction back when another instance decided the notice.
var errAlertDecided = errors.New("alert decided elsewhere")

// RecordAlert writes n if its decision still holds (see outbox.AlertStore).
func RecordAlert(ctx context.Context, d Driver, n outbox.AlertNotice) (bool, error) {
	if len(n.Deliveries) > 0 && n.Submission == nil {
		return false, fmt.Errorf("record alert %s %s: deliveries without a submission", n.Alert.Kind, n.Alert.Key)
	}
	n.Now = orNow(n.Now)
	err := d.WriteTx(ctx, func(tx Tx) error {
		var (
			ok   bool
			err  error
			kind string
		)
		switch n.Notice {
		case outbox.AlertOpened:
			kind = outbox.EventAlertOpened
			ok, err = tx.InsertAlert(ctx, n.Alert)
		case outbox.AlertStill:
			kind = outbox.EventAlertStill
			ok, err = tx.RenotifyAlert(ctx, n)
		case outbox.AlertResolved:
			kind = outbox.EventAlertResolved
			ok, err = tx.ResolveAlert(ctx, n)
		case outbox.AlertRefreshed:
			if len(n.Deliveries) > 0 {
				return fmt.Errorf("a refresh carries no deliveries")
			}
			ok, err = tx.RefreshAlert(ctx, n)
			if err == nil && !ok {
				err = errAlertDecided
			}
			return err
		default:
			return fmt.Errorf("unknown notice %q", n.Notice)
		}
		if err != nil {
			return err
		}
		if !ok {
			return errAlertDecided
		}
		subID := uuid.Nil
		if n.Submission != nil && len(n.Deliveries) > 0 {
			sub := *n.Submission
			sub.Form, sub.Status, sub.Test = outbox.AlertsForm, outbox.SubmissionAccepted, true
			if sub.CreatedAt.IsZero() {
				sub.CreatedAt = n.Now
			}
			if err := tx.InsertAlertSubmission(ctx, &sub); err != nil {
				return fmt.Errorf("insert alert submission: %w", err)
			}
			for i, del := range n.Deliveries {
				if err := tx.InsertDelivery(ctx, outbox.PlannedDelivery(&sub, del, sub.CreatedAt)); err != nil {
					return fmt.Errorf("insert alert delivery %d: %w", i, err)
				}
			}
			subID = sub.ID
		}
		data, err := json.Marshal(map[string]any{"alert_id": n.Alert.ID.String(), "kind": n.Alert.Kind, "key": n.Alert.Key,
			"affected": n.Alert.Affected, "deliveries": len(n.Deliveries)})
		if err != nil {
			return err
		}
		return tx.InsertEvent(ctx, outbox.Event{Kind: kind, SubmissionID: subID, Data: data, At: n.Now})
	})
	switch {
	case errors.Is(err, errAlertDecided):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("record alert %s %s %s: %w", n.Notice, n.Alert.Kind, n.Alert.Key, err)
	}
	return true, nil
}
