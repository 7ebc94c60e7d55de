package telemetry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Parking's counters (this instance's) and gauges (the store's, read at scrape time).
var (
	parksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_destination_parks_total",
		Help: "Destinations this instance parked (automatically or by hand), by channel.",
	}, []string{"channel"})
	unparksTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "form_outbox_destination_unparks_total",
		Help: "Destinations this instance unparked (a probe got through, or by hand).",
	})
	heldTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "form_outbox_deliveries_held_total",
		Help: "Deliveries this instance held because their destination is parked, by channel.",
	}, []string{"channel"})

	parkedDestinationsDesc = prometheus.NewDesc("form_outbox_destinations_parked",
		"Destinations parked now, by channel.", []string{"channel"}, nil)
	parkedDeliveriesDesc = prometheus.NewDesc("form_outbox_deliveries_parked",
		"Deliveries held in status parked now, by channel.", []string{"channel"}, nil)
)

// scrapeTimeout bounds the store read of one scrape.
const scrapeTimeout = 5 * time.Second

// ParkedGauges exports the parked destinations and their held deliveries from the store
// at scrape time (one indexed read: only parked rows are in deliveries_parked), with
// this instance's parking counters. Every channel's series exists, at 0 when nothing is
// parked, so an alert rule on them has a sample from the start.
func ParkedGauges(store func() outbox.DestinationStore) prometheus.Collector {
	return parkedCollector{store: store}
}

type parkedCollector struct {
	store func() outbox.DestinationStore
}

// Describe implements prometheus.Collector.
func (c parkedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- parkedDestinationsDesc
	ch <- parkedDeliveriesDesc
	parksTotal.Describe(ch)
	unparksTotal.Describe(ch)
	heldTotal.Describe(ch)
}

// Collect implements prometheus.Collector. A store that does not answer leaves the
// gauges out of the scrape rather than reporting zeros.
func (c parkedCollector) Collect(ch chan<- prometheus.Metric) {
	parksTotal.Collect(ch)
	unparksTotal.Collect(ch)
	heldTotal.Collect(ch)
	s := c.store()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	list, err := s.ListParkedDestinations(ctx)
	if err != nil {
		return
	}
	dests, held := map[outbox.Channel]int{}, map[outbox.Channel]int{}
	for _, p := range list {
		dests[p.Channel]++
		held[p.Channel] += p.Held
	}
	for _, chl := range append([]outbox.Channel{outbox.ChannelEmail, outbox.ChannelWebhook}, outbox.ChatChannels...) {
		ch <- prometheus.MustNewConstMetric(parkedDestinationsDesc, prometheus.GaugeValue, float64(dests[chl]), string(chl))
		ch <- prometheus.MustNewConstMetric(parkedDeliveriesDesc, prometheus.GaugeValue, float64(held[chl]), string(chl))
	}
}

var _ prometheus.Collector = parkedCollector{}
