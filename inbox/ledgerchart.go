package inbox

import (
	"fmt"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ledgerChartDays is how many UTC days the overview's ledger chart shows.
const ledgerChartDays = 14

// The chart's geometry, in SVG user units: one column per day, two bands (submissions
// above, deliveries below) drawn upward from their baselines, and a strip on top for
// the mismatch marks. The SVG scales to the card's width (inbox.css, .chart).
const (
	chartCol    = 20 // a day's column
	chartBar    = 14 // its bar
	chartBand   = 44 // a band's height
	chartMark   = 8  // the mismatch strip
	chartGap    = 10 // between the bands
	chartLabels = 14 // the day labels under the chart
)

// chartRect is one rectangle; its colour comes from Class (inbox.css), never an inline
// style, which the CSP forbids.
type chartRect struct {
	X, Y, W, H int
	Class      string
}

// chartLabel is a day's label under the chart.
type chartLabel struct {
	X      int
	Text   string
	Anchor string // text-anchor: the first and last labels stay inside the chart
}

// ledgerChartDay is one day of a form: the chart's numbers and the table alternative's
// row.
type ledgerChartDay struct {
	Day                                   string
	Answered, Accepted, Spam, Quarantined int64
	Sent, Pending, Parked, Dead           int64
	Check                                 string
	Mismatch                              bool
}

// ledgerChart is one form's chart: rectangles to draw, a title and a description for
// screen readers, and the same numbers as a table.
type ledgerChart struct {
	ID            string // unique on the page, for aria-labelledby
	Form          string
	Width, Height int
	Rects         []chartRect
	Baselines     []chartRect // the two bands' baselines
	Labels        []chartLabel
	LabelY        int
	Title, Desc   string
	Days          []ledgerChartDay // oldest first
	Mismatches    int
}

// ledgerCharts builds one chart per form of l, for the ledgerChartDays ending with
// today's, in form order.
func ledgerCharts(l outbox.Ledger, forms []string, today time.Time) []ledgerChart {
	first := outbox.UTCDay(today).AddDate(0, 0, -(ledgerChartDays - 1))
	byForm := map[string]map[string]outbox.LedgerDay{}
	for _, d := range l.Days {
		if byForm[d.Form] == nil {
			byForm[d.Form] = map[string]outbox.LedgerDay{}
		}
		byForm[d.Form][d.Day.Format(time.DateOnly)] = d
	}
	var out []ledgerChart
	for i, form := range forms {
		days := make([]ledgerChartDay, ledgerChartDays)
		for j := range days {
			key := first.AddDate(0, 0, j).Format(time.DateOnly)
			d := byForm[form][key]
			days[j] = ledgerChartDay{Day: key, Answered: d.Answered, Accepted: d.Accepted, Spam: d.Spam,
				Quarantined: d.Quarantined, Sent: d.Sent, Pending: d.Pending, Parked: d.Parked, Dead: d.Dead,
				Check: checkText(d), Mismatch: len(d.Mismatches) > 0}
		}
		out = append(out, drawLedgerChart(fmt.Sprintf("ledger-%d", i), form, days))
	}
	return out
}

// checkText says a day's verdict in words, for the table and the description.
func checkText(d outbox.LedgerDay) string {
	if len(d.Mismatches) == 0 {
		return "ok"
	}
	return strings.Join(outbox.DescribeMismatches(d.Mismatches, d.Unaccounted, d.Undelivered), "; ")
}

func drawLedgerChart(id, form string, days []ledgerChartDay) ledgerChart {
	c := ledgerChart{ID: id, Form: form, Width: chartCol * len(days), Days: days}
	subsBase := chartMark + chartBand
	delsBase := subsBase + chartGap + chartBand
	c.LabelY = delsBase + chartLabels - 2
	c.Height = delsBase + chartLabels
	var maxSubs, maxDels int64 = 1, 1
	var totals ledgerChartDay
	for _, d := range days {
		maxSubs = max(maxSubs, d.Accepted+d.Spam+d.Quarantined)
		maxDels = max(maxDels, d.Sent+d.Pending+d.Parked+d.Dead)
		totals.Answered += d.Answered
		totals.Accepted += d.Accepted
		totals.Spam += d.Spam
		totals.Quarantined += d.Quarantined
		totals.Sent += d.Sent
		totals.Dead += d.Dead
	}
	for i, d := range days {
		x := i*chartCol + (chartCol-chartBar)/2
		c.Rects = append(c.Rects, stack(x, subsBase, maxSubs,
			[]int64{d.Accepted, d.Spam, d.Quarantined}, []string{"c-accepted", "c-spam", "c-quarantined"})...)
		c.Rects = append(c.Rects, stack(x, delsBase, maxDels,
			[]int64{d.Sent, d.Pending, d.Parked, d.Dead}, []string{"c-sent", "c-pending", "c-parked", "c-dead"})...)
		if d.Mismatch {
			c.Mismatches++
			c.Rects = append(c.Rects, chartRect{X: x, Y: 0, W: chartBar, H: chartMark - 2, Class: "c-mismatch"})
		}
		switch i {
		case 0:
			c.Labels = append(c.Labels, chartLabel{X: 0, Text: d.Day[5:], Anchor: "start"})
		case len(days) / 2:
			c.Labels = append(c.Labels, chartLabel{X: i*chartCol + chartCol/2, Text: d.Day[5:], Anchor: "middle"})
		case len(days) - 1:
			c.Labels = append(c.Labels, chartLabel{X: c.Width, Text: d.Day[5:], Anchor: "end"})
		}
	}
	c.Baselines = []chartRect{{X: 0, Y: subsBase, W: c.Width, H: 1, Class: "c-axis"}, {X: 0, Y: delsBase, W: c.Width, H: 1, Class: "c-axis"}}
	c.Title = fmt.Sprintf("Form %s, last %d days (UTC): submissions and deliveries per day", form, len(days))
	c.Desc = fmt.Sprintf("%d posts answered, %d accepted, %d spam, %d quarantined; %d deliveries sent, %d dead; %s.",
		totals.Answered, totals.Accepted, totals.Spam, totals.Quarantined, totals.Sent, totals.Dead, mismatchWords(c.Mismatches))
	return c
}

func mismatchWords(n int) string {
	switch n {
	case 0:
		return "no mismatch"
	case 1:
		return "a mismatch on 1 day"
	}
	return fmt.Sprintf("a mismatch on %d days", n)
}

// stack draws values as a bar stacked upward from base, scaled so that top is the full
// band; a value too small to show gets one unit, so that nothing counted is invisible.
func stack(x, base int, top int64, values []int64, classes []string) []chartRect {
	var out []chartRect
	y := base
	for i, v := range values {
		if v <= 0 {
			continue
		}
		h := max(int(v*chartBand/top), 1)
		y -= h
		out = append(out, chartRect{X: x, Y: y, W: chartBar, H: h, Class: classes[i]})
	}
	return out
}
