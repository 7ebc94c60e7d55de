package adminapi

import (
	"time"

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
