package adminapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// GET /form_outbox/alerts[?resolved=N]: the open owner alerts, oldest first, then up to
// N of the most recently resolved (docs/operations.md, "Alerts").

// maxResolved bounds ?resolved.
const maxResolved = 500

// Alert is one owner alert as the admin API and the CLI show it.
type Alert struct {
	ID         string     `json:"id"`
	Kind       string     `json:"kind"`
	Key        string     `json:"key"`
	Form       string     `json:"form,omitempty"`
	Summary    string     `json:"summary"`
	Affected   int        `json:"affected"`
	Channel    string     `json:"channel,omitempty"`
	Instance   string     `json:"instance,omitempty"`
	Notices    int        `json:"notices"`
	OpenedAt   time.Time  `json:"opened_at"`
	NotifiedAt time.Time  `json:"notified_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// AlertList is the answer of GET alerts.
type AlertList struct {
	Open     []Alert `json:"open"`
	Resolved []Alert `json:"resolved"`
}

// NewAlertList sorts alerts into open and resolved ones, in the order given.
func NewAlertList(as []outbox.Alert) AlertList {
	l := AlertList{Open: []Alert{}, Resolved: []Alert{}}
	for _, a := range as {
		v := Alert{ID: a.ID.String(), Kind: a.Kind, Key: a.Key, Form: a.Form, Summary: a.Summary, Affected: a.Affected,
			Channel: a.Channel, Instance: a.Instance, Notices: a.Notices, OpenedAt: a.OpenedAt, NotifiedAt: a.NotifiedAt}
		if a.ResolvedAt.IsZero() {
			l.Open = append(l.Open, v)
			continue
		}
		at := a.ResolvedAt
		v.ResolvedAt = &at
		l.Resolved = append(l.Resolved, v)
	}
	return l
}

func serveListAlerts(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	resolved := 0
	if v := r.URL.Query().Get("resolved"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxResolved {
			return apiError(http.StatusBadRequest, fmt.Errorf("resolved %q: want a whole number from 0 to %d", v, maxResolved))
		}
		resolved = n
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	as, err := b.Store().ListAlerts(ctx, resolved)
	if err != nil {
		return storeError(err)
	}
	return writeJSON(w, http.StatusOK, NewAlertList(as))
}
