package formoutbox

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Counters live at package level so they keep counting across config reloads; each
// config's registry (served by the admin endpoint's /metrics) registers them anew.
var (
	submissionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_submissions_total",
		Help: "Submissions stored, by form and status (accepted, spam, quarantined).",
	}, []string{"form", "status"})
	deliveriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_deliveries_total",
		Help: "Delivery attempts recorded, by channel, provider and outcome (sent, temporary, permanent, ambiguous).",
	}, []string{"channel", "provider", "outcome"})
	deliveryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "form_outbox_delivery_duration_seconds",
		Help:    "Time one delivery attempt spent with its provider(s).",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30},
	}, []string{"channel"})
	deadTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_deliveries_dead_total",
		Help: "Deliveries given up on (permanent error or attempts exhausted), by channel.",
	}, []string{"channel"})
)

// alertedChannels are the label values of the counters that README alert rules watch
// with increase(): a series that appears only with its first event gives increase() no
// earlier sample, so the first dead delivery would never alert. registerMetrics creates
// them at 0.
var alertedChannels = append([]outbox.Channel{outbox.ChannelEmail, outbox.ChannelWebhook}, outbox.ChatChannels...)

// Descriptions of intake's counters (intake/counters.go): what the defences did without
// a stored row to count from the database.
var (
	rateLimitedDesc = prometheus.NewDesc("form_outbox_rate_limited_total",
		"Posts over the form's rate limit, all answered 429.", []string{"form"}, nil)
	rateLimitedDroppedDesc = prometheus.NewDesc("form_outbox_rate_limited_dropped_total",
		"Rate-limited posts not stored because the form's quota of rate_limited rows for the window was used up.", []string{"form"}, nil)
	deduplicatedDesc = prometheus.NewDesc("form_outbox_deduplicated_total",
		"Double posts answered with the first post's id instead of being stored again.", []string{"form"}, nil)
)

// intakeCounters exports intake.ReadCounters at scrape time. The counters live in
// intake's package registry, so they stay monotonic across reloads like the ones above;
// each form's series exists from the Provision of its handler, at 0.
type intakeCounters struct{}

// Describe implements prometheus.Collector.
func (intakeCounters) Describe(ch chan<- *prometheus.Desc) {
	ch <- rateLimitedDesc
	ch <- rateLimitedDroppedDesc
	ch <- deduplicatedDesc
}

// Collect implements prometheus.Collector.
func (intakeCounters) Collect(ch chan<- prometheus.Metric) {
	for _, c := range intake.ReadCounters() {
		ch <- prometheus.MustNewConstMetric(rateLimitedDesc, prometheus.CounterValue, float64(c.RateLimited), c.Form)
		ch <- prometheus.MustNewConstMetric(rateLimitedDroppedDesc, prometheus.CounterValue, float64(c.RateLimitedDropped), c.Form)
		ch <- prometheus.MustNewConstMetric(deduplicatedDesc, prometheus.CounterValue, float64(c.Deduplicated), c.Form)
	}
}

// registerMetrics adds the outbox's metrics to this config's registry.
func (a *App) registerMetrics(reg *prometheus.Registry) error {
	a.metrics = adminapi.NewLiveStats(a.store)
	if reg == nil {
		return nil
	}
	for _, ch := range alertedChannels {
		deadTotal.WithLabelValues(string(ch))
	}
	for _, c := range []prometheus.Collector{submissionsTotal, deliveriesTotal, deliveryDuration, deadTotal, feedbackTotal, intakeCounters{}, a.metrics} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				continue
			}
			return err
		}
	}
	return nil
}

// onAttempt is the worker's OnAttempt hook.
func (a *App) onAttempt(d outbox.Delivery, at outbox.Attempt) {
	provider := at.Provider
	if provider == "" {
		provider = "none"
	}
	deliveriesTotal.WithLabelValues(string(d.Channel), provider, string(at.Outcome)).Inc()
	if dur := at.FinishedAt.Sub(at.StartedAt); dur >= 0 {
		deliveryDuration.WithLabelValues(string(d.Channel)).Observe(dur.Seconds())
	}
}

// onDead is the worker's OnDead hook: a counter, a Caddy event. The worker has already
// logged the death with ids and error classes.
func (a *App) onDead(d outbox.Delivery) {
	deadTotal.WithLabelValues(string(d.Channel)).Inc()
	a.emitDeliveryDead(d)
}

// received counts a newly stored submission and announces it.
func (a *App) received(sub *outbox.Submission, stored outbox.AcceptResult) {
	if stored.Duplicate {
		return
	}
	submissionsTotal.WithLabelValues(sub.Form, string(stored.Status)).Inc()
	a.emitSubmissionReceived(sub, stored)
}

var _ prometheus.Collector = intakeCounters{}
