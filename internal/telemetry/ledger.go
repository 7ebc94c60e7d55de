package telemetry

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// The lead ledger's counters (outbox/ledger_counter.go) as metrics: posts answered
// success, spooled and replayed, per form. Stored submissions per form and status are
// form_outbox_submissions_total; answered minus stored over a window that the spool
// does not cover is what the ledger's mismatch check looks at per day.
var (
	answeredTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_answered_total",
		Help: "New posts answered success (stored or queued), by form; test posts excluded.",
	}, []string{"form"})
	spooledTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_spooled_total",
		Help: "Posts answered queued: the spool took them because the store did not, by form.",
	}, []string{"form"})
	replayedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_replayed_total",
		Help: "Spooled posts the replayer stored, by form.",
	}, []string{"form"})
)

// Answered counts a post answered success; queued: the spool took it.
func Answered(form string, queued bool) {
	answeredTotal.WithLabelValues(form).Inc()
	if queued {
		spooledTotal.WithLabelValues(form).Inc()
	}
}

// Replayed counts a spooled post the replayer stored.
func Replayed(form string) { replayedTotal.WithLabelValues(form).Inc() }

// LedgerForm creates a form's ledger series at 0, so increase() over them has a first
// sample before the form's first post.
func LedgerForm(form string) {
	answeredTotal.WithLabelValues(form)
	spooledTotal.WithLabelValues(form)
	replayedTotal.WithLabelValues(form)
}

// LedgerMismatchGauge exports how many ledger lines (form and day) show a mismatch, as
// the ledger's alert source last read them (NaN when it could not read them).
func LedgerMismatchGauge(lines func() (int, error)) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "form_outbox_ledger_mismatches",
		Help: "Lead ledger lines (form and UTC day) with a mismatch in the last days: answered posts not stored, or accepted submissions without a delivery.",
	}, func() float64 {
		n, err := lines()
		if err != nil {
			return math.NaN()
		}
		return float64(n)
	})
}

var ledgerCollectors = []prometheus.Collector{answeredTotal, spooledTotal, replayedTotal}
