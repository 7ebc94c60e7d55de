package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
)

// BackupHealth is the off-host backup's part of the health body. It never makes the
// answer 503: a bucket that is down slows no post (the journal keeps the records), and a
// load balancer must not take the host out for it. State says what to look at:
// "ok", "failing" (the last pass did not reach the bucket) or "near_bound" (the journal
// kept for the bucket passed 80% of max_local; past it, records go unshipped).
type BackupHealth struct {
	State          string     `json:"state"`
	Objects        int64      `json:"objects_shipped"`
	Records        int64      `json:"records_shipped"`
	Dropped        int64      `json:"records_dropped,omitempty"`
	LagRecords     int        `json:"lag_records"`
	LagBytes       int64      `json:"lag_bytes"`
	LagSeconds     float64    `json:"lag_seconds"`
	LastShipped    *time.Time `json:"last_shipped,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	LastErrorAt    *time.Time `json:"last_error_at,omitempty"`
	MaxLocalBytes  int64      `json:"max_local_bytes"`
	ShipEverySecs  float64    `json:"every_seconds"`
	DestinationURL string     `json:"url"`
}

// BackupHealthOf judges a shipper's numbers.
func BackupHealthOf(url string, s *backup.Shipper) *BackupHealth {
	st, lag := s.Stats(), s.Lag()
	h := &BackupHealth{State: "ok", Objects: st.Objects, Records: st.Records, Dropped: st.Dropped,
		LagRecords: lag.Records, LagBytes: lag.Bytes, LagSeconds: lag.Seconds, LastError: st.LastError,
		MaxLocalBytes: s.MaxLocal, ShipEverySecs: s.Interval.Seconds(), DestinationURL: url}
	if !st.LastShipped.IsZero() {
		t := st.LastShipped
		h.LastShipped = &t
	}
	switch {
	case st.LastError != "":
		h.State = "failing"
		t := st.LastErrorAt
		h.LastErrorAt = &t
	case lag.NearBound:
		h.State = "near_bound"
	}
	return h
}

// ParseWhen reads a time as the list filters do (RFC 3339, a date, or a duration ago):
// `caddy form-outbox restore --since/--until` takes the same forms.
func ParseWhen(s string, now time.Time) (time.Time, error) { return parseWhen(s, now) }

// BackupRestorer is the part of a Backend that restores from the off-host backups; a
// Backend without it (or whose App has no `backup`) answers 409 ErrBackupOff.
type BackupRestorer interface {
	RestoreBackup(ctx context.Context, w backup.Window, opt backup.RestoreOptions) (backup.RestoreReport, error)
}

// ErrBackupOff is what a restore answers when the App has no `backup` option.
var ErrBackupOff = errors.New("backup is off: configure the backup option, or run form-outbox restore with --from and --storage")

// adminRestoreTimeout bounds one restore through the admin API; a larger window is for
// the offline command, which has no timeout.
const adminRestoreTimeout = 10 * time.Minute

// serveBackupRestore: POST backup/restore?since=T[&until=T][&form=F][&dry_run=1]
// [&skip_deliveries=1] restores
// the window from the running App's bucket into its store and answers the report.
func serveBackupRestore(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	rb, ok := b.(BackupRestorer)
	if !ok {
		return apiError(http.StatusConflict, ErrBackupOff)
	}
	q := r.URL.Query()
	if err := onlyParams(q, "since", "until", "form", "dry_run", "skip_deliveries"); err != nil {
		return err
	}
	now := time.Now()
	win := backup.Window{Form: q.Get("form"), Until: now}
	var err error
	if q.Get("since") == "" {
		return apiError(http.StatusBadRequest, errors.New("since is required"))
	}
	if win.Since, err = parseWhen(q.Get("since"), now); err != nil {
		return apiError(http.StatusBadRequest, err)
	}
	if u := q.Get("until"); u != "" {
		if win.Until, err = parseWhen(u, now); err != nil {
			return apiError(http.StatusBadRequest, err)
		}
	}
	yes := func(k string) bool { return q.Get(k) == "1" || q.Get(k) == "true" }
	dry := yes("dry_run")
	ctx, cancel := context.WithTimeout(r.Context(), adminRestoreTimeout)
	defer cancel()
	rep, err := rb.RestoreBackup(ctx, win, backup.RestoreOptions{DryRun: dry, SkipDeliveries: yes("skip_deliveries")})
	switch {
	case errors.Is(err, ErrBackupOff):
		return apiError(http.StatusConflict, err)
	case err != nil && !errors.Is(err, backup.ErrCorrupt):
		// Ids and keys only: the report counts what was done before the error.
		return apiError(http.StatusServiceUnavailable, err)
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(rep)
}

// Line is the backup in one sentence for the inbox overview: its state and what is not
// in the bucket yet. Counts only.
func (h *BackupHealth) Line() string {
	waiting := "every submission is in the bucket"
	if h.LagRecords > 0 {
		waiting = fmt.Sprintf("%d submissions not in the bucket yet, the oldest for %s",
			h.LagRecords, (time.Duration(h.LagSeconds) * time.Second).String())
	}
	switch h.State {
	case "failing":
		return "backup failing: " + waiting
	case "near_bound":
		return "backup near max_local: " + waiting
	case "ok":
		return "backup: " + waiting
	}
	return "backup " + strings.ReplaceAll(h.State, "_", " ")
}
