package outbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DefaultLedgerAlertDays is how many UTC days the ledger's alert source looks back.
const DefaultLedgerAlertDays = 7

// DefaultLedgerAlertEvery is how often the ledger's alert source reads the ledger; the
// evaluator may poll it more often and gets the last answer in between, since a day's
// ledger at a million submissions costs seconds of reads (LedgerStore.LedgerRows).
const DefaultLedgerAlertEvery = 5 * time.Minute

// LedgerAlertConfig configures NewLedgerAlertSource.
type LedgerAlertConfig struct {
	Store LedgerStore
	// Checked and Horizon are LedgerQuery's.
	Checked func(form string) bool
	Horizon time.Duration
	Days    int           // default DefaultLedgerAlertDays
	Every   time.Duration // default DefaultLedgerAlertEvery
}

// NewLedgerAlertSource reports AlertLedgerMismatch for every form and day whose ledger
// shows a mismatch (LedgerDay.Mismatches), keyed "form/YYYY-MM-DD". It holds while the
// mismatch does: retrying a lost delivery by hand does not resolve it (the row is still
// missing), erasing the submission or the day leaving the look-back does.
func NewLedgerAlertSource(cfg LedgerAlertConfig) AlertSource {
	if cfg.Days <= 0 {
		cfg.Days = DefaultLedgerAlertDays
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultLedgerAlertEvery
	}
	return &ledgerAlerts{cfg: cfg}
}

type ledgerAlerts struct {
	cfg LedgerAlertConfig

	mu   sync.Mutex
	at   time.Time // of the last read; zero: never
	last []AlertCondition
}

func (s *ledgerAlerts) Name() string { return "ledger" }

// Invalidate makes the next Conditions read the ledger again. An operator who reads the
// ledger (admin API, CLI) and sees a mismatch must find the alert and the gauge saying
// the same at their next poll, not up to Every later.
func (s *ledgerAlerts) Invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = time.Time{}
}

// LedgerInvalidator is what NewLedgerAlertSource's source also is.
type LedgerInvalidator interface{ Invalidate() }

func (s *ledgerAlerts) Conditions(ctx context.Context, now time.Time) ([]AlertCondition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && now.Sub(s.at) < s.cfg.Every && !now.Before(s.at) {
		return s.last, nil
	}
	l, err := BuildLedger(ctx, s.cfg.Store, LedgerQuery{Days: s.cfg.Days, Now: now,
		Checked: s.cfg.Checked, Horizon: s.cfg.Horizon})
	if err != nil {
		return nil, fmt.Errorf("ledger alerts: %w", err)
	}
	s.last, s.at = LedgerConditions(l), now
	return s.last, nil
}

// LedgerConditions turns a ledger's mismatches into alert conditions.
func LedgerConditions(l Ledger) []AlertCondition {
	var out []AlertCondition
	for _, d := range l.Mismatched() {
		day := d.Day.Format(time.DateOnly)
		what := DescribeMismatches(d.Mismatches, d.Unaccounted, d.Undelivered)
		var affected int64
		for _, m := range d.Mismatches {
			switch m {
			case MismatchNotStored:
				affected += d.Unaccounted
			case MismatchUndelivered:
				affected += d.Undelivered
			}
		}
		out = append(out, AlertCondition{
			Kind:     AlertLedgerMismatch,
			Key:      d.Form + "/" + day,
			Summary:  fmt.Sprintf("lead ledger of form %s on %s (UTC): %s", d.Form, day, strings.Join(what, "; ")),
			Affected: int(affected),
			Form:     d.Form,
			Since:    d.Day,
		})
	}
	return out
}
