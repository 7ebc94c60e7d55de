// Package telemetry turns what the outbox does into Prometheus metrics and event payloads:
// the worker's attempts and dead deliveries, stored submissions, recorded feedback, and
// intake's defence counters. The root package wires it to Caddy: it registers the
// collectors in each config's registry and hands the events to Caddy's events app.
package telemetry

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/intake"
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
	feedbackTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_feedback_total",
		Help: "Post-send reports recorded, by source (ses, resend), kind (delivered, bounced, complained) and bounce type (hard, soft, or empty).",
	}, []string{"source", "kind", "bounce_type"})
)

// alertedChannels are the label values of the counters that README alert rules watch
// with increase(): a series that appears only with its first event gives increase() no
// earlier sample, so the first dead delivery would never alert. Register creates them
// at 0.
var alertedChannels = append([]outbox.Channel{outbox.ChannelEmail, outbox.ChannelAutoreply, outbox.ChannelWebhook}, outbox.ChatChannels...)

// Descriptions of intake's counters (intake/counters.go): what the defences did without
// a stored row to count from the database.
var (
	rateLimitedDesc = prometheus.NewDesc("form_outbox_rate_limited_total",
		"Posts over the form's rate limit, all answered 429.", []string{"form"}, nil)
	rateLimitedDroppedDesc = prometheus.NewDesc("form_outbox_rate_limited_dropped_total",
		"Rate-limited posts not stored because the form's quota of rate_limited rows for the window was used up.", []string{"form"}, nil)
	deduplicatedDesc = prometheus.NewDesc("form_outbox_deduplicated_total",
		"Double posts answered with the first post's id instead of being stored again.", []string{"form"}, nil)
	templateEmptyDesc = prometheus.NewDesc("form_outbox_template_empty_total",
		"Deliveries whose message printed a field the post did not carry (a template.empty event each, per option and field).", []string{"form", "route"}, nil)
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
	ch <- templateEmptyDesc
}

// Collect implements prometheus.Collector.
func (intakeCounters) Collect(ch chan<- prometheus.Metric) {
	for _, c := range intake.ReadCounters() {
		ch <- prometheus.MustNewConstMetric(rateLimitedDesc, prometheus.CounterValue, float64(c.RateLimited), c.Form)
		ch <- prometheus.MustNewConstMetric(rateLimitedDroppedDesc, prometheus.CounterValue, float64(c.RateLimitedDropped), c.Form)
		ch <- prometheus.MustNewConstMetric(deduplicatedDesc, prometheus.CounterValue, float64(c.Deduplicated), c.Form)
		for route, n := range c.TemplateEmpty {
			ch <- prometheus.MustNewConstMetric(templateEmptyDesc, prometheus.CounterValue, float64(n), c.Form, route)
		}
	}
}

// Register adds the outbox's metrics, and the config's own collectors in extra (the
// live outbox numbers), to one config's registry. A collector a previous config already
// registered in it is no error: the package-level counters are meant to be shared.
func Register(reg *prometheus.Registry, extra ...prometheus.Collector) error {
	for _, ch := range alertedChannels {
		deadTotal.WithLabelValues(string(ch))
	}
	cs := append([]prometheus.Collector{submissionsTotal, deliveriesTotal, deliveryDuration, deadTotal, feedbackTotal, alertNoticesDead, intakeCounters{}}, ledgerCollectors...)
	cs = append(cs, extra...)
	for _, c := range cs {
		if err := RegisterOnce(reg, c); err != nil {
			return err
		}
	}
	return nil
}

// RegisterOnce registers c, treating "already registered" as done.
func RegisterOnce(reg *prometheus.Registry, c prometheus.Collector) error {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return nil
	}
	return err
}

// SpoolGauge exports the spool's depth, read from entries at scrape time.
func SpoolGauge(entries func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "form_outbox_spool_entries",
		Help: "Submissions spooled on local disk and not yet stored in the database.",
	}, func() float64 { return float64(entries()) })
}

// alertNoticesDead counts alert notices given up on: they never raise an alert of their
// own (outbox/alert, DeadDeliveries), so this and the log are where they show.
var alertNoticesDead = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "form_outbox_alert_notices_dead_total",
	Help: "Alert notices given up on (the owner was not told through that target), by channel.",
}, []string{"channel"})

// AlertNoticeDead counts one dead alert notice.
func AlertNoticeDead(ch outbox.Channel) { alertNoticesDead.WithLabelValues(string(ch)).Inc() }

var alertsOpenDesc = prometheus.NewDesc("form_outbox_alerts_open",
	"Owner alerts open, by kind (docs/operations.md, \"Alerts\").", []string{"kind"}, nil)

// alertKinds are the kinds exported at 0 when none of theirs is open, so a rule on
// form_outbox_alerts_open > 0 has a series from the start.
var alertKinds = []string{outbox.AlertDeliveryDead, outbox.AlertUnrouted, outbox.AlertTemplateEmpty,
	outbox.AlertDestinationParked, outbox.AlertStoreUnreachable, outbox.AlertSpoolBacklog,
	outbox.AlertFeedbackRate, outbox.AlertCanaryFailed, outbox.AlertLedgerMismatch}

type alertsGauge struct{ open func() []outbox.Alert }

// AlertsGauge exports the open alerts per kind, read from open (the evaluator's last
// pass) at scrape time.
func AlertsGauge(open func() []outbox.Alert) prometheus.Collector { return alertsGauge{open} }

// Describe implements prometheus.Collector.
func (alertsGauge) Describe(ch chan<- *prometheus.Desc) { ch <- alertsOpenDesc }

// Collect implements prometheus.Collector.
func (g alertsGauge) Collect(ch chan<- prometheus.Metric) {
	n := map[string]int{}
	for _, k := range alertKinds {
		n[k] = 0
	}
	for _, a := range g.open() {
		n[a.Kind]++
	}
	for k, v := range n {
		ch <- prometheus.MustNewConstMetric(alertsOpenDesc, prometheus.GaugeValue, float64(v), k)
	}
}

var _ prometheus.Collector = intakeCounters{}
