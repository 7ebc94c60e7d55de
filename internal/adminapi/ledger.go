package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// GET /form_outbox/ledger[?form=F&form=G&days=N]: the lead ledger (outbox/ledger.go) of
// the last N UTC days (default 7, at most MaxLedgerDays), per form and day, oldest first.

// MaxLedgerDays bounds one ledger read: each day costs a range of the submissions'
// created_at index (outbox.LedgerStore.LedgerRows).
const MaxLedgerDays = 366

// DefaultLedgerDays is the ledger's length when none is asked for.
const DefaultLedgerDays = 7

// Ledger is the body of GET /form_outbox/ledger.
type Ledger struct {
	From  string      `json:"from"`  // first day, YYYY-MM-DD (UTC)
	Until string      `json:"until"` // the day after the last
	Days  []LedgerDay `json:"days"`
	// Mismatches counts the lines with a mismatch; 0 is the answer an operator wants.
	Mismatches int `json:"mismatches"`
}

// LedgerDay is one form's line for one UTC day (docs/operations.md, "Lead ledger").
type LedgerDay struct {
	Day         string        `json:"day"`
	Form        string        `json:"form"`
	Closed      bool          `json:"closed"`
	Answered    int64         `json:"answered"`
	Spooled     int64         `json:"spooled"`
	Replayed    int64         `json:"replayed"`
	Accepted    int64         `json:"accepted"`
	Spam        int64         `json:"spam"`
	Quarantined int64         `json:"quarantined"`
	Erased      int64         `json:"erased"`
	Sent        int64         `json:"sent"`
	Pending     int64         `json:"pending"`
	Parked      int64         `json:"parked"`
	Dead        int64         `json:"dead"`
	Skipped     int64         `json:"skipped"`
	Undelivered int64         `json:"undelivered"`
	Unaccounted int64         `json:"unaccounted"`
	Routes      []LedgerRoute `json:"routes"`
	Mismatches  []string      `json:"mismatches,omitempty"`
}

// LedgerRoute is one route's deliveries on a ledger line.
type LedgerRoute struct {
	Route   string `json:"route"`
	Sent    int64  `json:"sent"`
	Pending int64  `json:"pending"`
	Parked  int64  `json:"parked"`
	Dead    int64  `json:"dead"`
	Skipped int64  `json:"skipped"`
}

// NewLedger is the view of l.
func NewLedger(l outbox.Ledger) Ledger {
	v := Ledger{From: l.From.Format(time.DateOnly), Until: l.Until.Format(time.DateOnly), Days: []LedgerDay{}}
	for _, d := range l.Days {
		ld := LedgerDay{Day: d.Day.Format(time.DateOnly), Form: d.Form, Closed: d.Closed,
			Answered: d.Answered, Spooled: d.Spooled, Replayed: d.Replayed,
			Accepted: d.Accepted, Spam: d.Spam, Quarantined: d.Quarantined, Erased: d.Erased,
			Sent: d.Sent, Pending: d.Pending, Parked: d.Parked, Dead: d.Dead, Skipped: d.Skipped,
			Undelivered: d.Undelivered, Unaccounted: d.Unaccounted, Routes: []LedgerRoute{}, Mismatches: d.Mismatches}
		for _, r := range d.Routes {
			ld.Routes = append(ld.Routes, LedgerRoute{Route: r.Route, Sent: r.Sent, Pending: r.Pending,
				Parked: r.Parked, Dead: r.Dead, Skipped: r.Skipped})
		}
		if len(d.Mismatches) > 0 {
			v.Mismatches++
		}
		v.Days = append(v.Days, ld)
	}
	return v
}

func serveLedger(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	q := r.URL.Query()
	days := DefaultLedgerDays
	if s := q.Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLedgerDays {
			return apiError(http.StatusBadRequest, fmt.Errorf("days %q: want a whole number from 1 to %d", s, MaxLedgerDays))
		}
		days = n
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	l, err := b.Ledger(ctx, q["form"], days)
	if err != nil {
		return storeError(err)
	}
	return writeJSON(w, http.StatusOK, NewLedger(l))
}

// BuildLedger is Backend.Ledger for a backend that only has a store: no form is checked
// for deliveries and nothing is beyond retention.
func BuildLedger(ctx context.Context, store outbox.Store, forms []string, days int) (outbox.Ledger, error) {
	return outbox.BuildLedger(ctx, store, outbox.LedgerQuery{Days: days, Now: time.Now(), Forms: forms})
}
