package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
)

// BackupCollectors export the off-host backup (outbox/backup), read from the shipper
// that shipper returns at scrape time (nil: none running, every value 0).
func BackupCollectors(shipper func() *backup.Shipper) []prometheus.Collector {
	stat := func(f func(backup.Stats) int64) func() float64 {
		return func() float64 {
			if s := shipper(); s != nil {
				return float64(f(s.Stats()))
			}
			return 0
		}
	}
	lag := func(f func(backup.Lag) float64) func() float64 {
		return func() float64 {
			if s := shipper(); s != nil {
				return f(s.Lag())
			}
			return 0
		}
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "form_outbox_backup_objects_total",
			Help: "Backup objects confirmed in the bucket by this process."},
			stat(func(s backup.Stats) int64 { return s.Objects })),
		backupByForm{shipper},
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "form_outbox_backup_dropped_records_total",
			Help: "Submissions released unshipped because the journal kept for the bucket passed max_local."},
			stat(func(s backup.Stats) int64 { return s.Dropped })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "form_outbox_backup_lag_records",
			Help: "Submissions journaled on this host and not yet confirmed in the bucket."},
			lag(func(l backup.Lag) float64 { return float64(l.Records) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "form_outbox_backup_lag_bytes",
			Help: "Journal bytes kept on this host for the bucket (bounded by max_local)."},
			lag(func(l backup.Lag) float64 { return float64(l.Bytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "form_outbox_backup_lag_seconds",
			Help: "Age of the oldest submission not yet confirmed in the bucket; 0 when none."},
			lag(func(l backup.Lag) float64 { return l.Seconds })),
	}
}

// backupByFormDesc is form_outbox_backup_records_total: per form, so that beside
// form_outbox_submissions_total it shows stored vs backed up 1:1.
var backupByFormDesc = prometheus.NewDesc("form_outbox_backup_records_total",
	"Submissions in the backup objects confirmed by this process, by form.", []string{"form"}, nil)

type backupByForm struct{ shipper func() *backup.Shipper }

func (c backupByForm) Describe(ch chan<- *prometheus.Desc) { ch <- backupByFormDesc }

func (c backupByForm) Collect(ch chan<- prometheus.Metric) {
	s := c.shipper()
	if s == nil {
		return
	}
	for form, n := range s.Stats().ByForm {
		ch <- prometheus.MustNewConstMetric(backupByFormDesc, prometheus.CounterValue, float64(n), form)
	}
}
