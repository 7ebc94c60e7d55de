package inbox

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"github.com/dustin/go-humanize"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages holds one template set per page, each the layout plus that page's content.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		// shown writes the zero-width characters and bidi controls of visitor text as
		// marked escapes (⟨U+200B⟩): an operator sees they are there, and none of them
		// can reorder the page; pages put each value in a <bdi> too.
		"shown": safetext.ShowInvisible,
		"bytes": func(n int64) string { return humanize.Bytes(uint64(max(n, 0))) },
		"short": func(id any) string {
			s := ""
			switch v := id.(type) {
			case string:
				s = v
			case interface{ String() string }:
				s = v.String()
			}
			if len(s) > 8 {
				return s[len(s)-8:]
			}
			return s
		},
	}
	out := map[string]*template.Template{}
	for _, p := range []string{"overview", "list", "detail", "erase", "suppressions", "destinations", "error"} {
		out[p] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFiles, "templates/layout.html", "templates/"+p+".html"))
	}
	return out
}()

// layout is what every page shows around its content.
type layout struct {
	Title  string
	Page   string // for the navigation's aria-current
	Base   string
	User   string
	Token  string
	Flash  string
	Error  string
	Status int
	// Alerts are the open owner alerts this inbox's forms are concerned by, shown as a
	// banner on every page (docs/operations.md, "Alerts").
	Alerts []alertRow
}

// alertRow is one open alert in the banner: ids, counts and our own sentences only.
type alertRow struct {
	Kind, Summary string
	Affected      int
	Since         time.Time
	Link          string // the dead deliveries of the form, for delivery_dead
}

func (rq *request) layout(page string) layout {
	return layout{Title: rq.h.cfg.Title, Page: page, Base: rq.h.cfg.BasePath, User: rq.user,
		Token: rq.token, Flash: flashText(rq.r), Alerts: rq.openAlerts()}
}

// openAlerts reads the open alerts (a handful of rows through the partial index of open
// alerts); a store that fails is logged, and the page shows without its banner.
func (rq *request) openAlerts() []alertRow {
	if rq.h.cfg.Store == nil {
		return nil
	}
	ctx, cancel := rq.ctx()
	defer cancel()
	as, err := rq.h.cfg.Store.ListAlerts(ctx, 0)
	if err != nil {
		rq.h.cfg.Logger.Warn("inbox: list alerts: " + err.Error())
		return nil
	}
	var out []alertRow
	for _, a := range as {
		if a.Form != "" && !rq.h.shows(a.Form) {
			continue
		}
		row := alertRow{Kind: a.Kind, Summary: a.Summary, Affected: a.Affected, Since: a.OpenedAt}
		if a.Kind == outbox.AlertDeliveryDead && a.Form != "" {
			row.Link = rq.h.cfg.BasePath + "/submissions?delivery=dead&form=" + url.QueryEscape(a.Form)
		}
		out = append(out, row)
	}
	return out
}

func (rq *request) render(status int, page string, data any) {
	rq.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	rq.w.Header().Set("Cache-Control", "no-store")
	rq.w.WriteHeader(status)
	if rq.r.Method == http.MethodHead {
		return
	}
	if err := pages[page].Execute(rq.w, data); err != nil {
		// The status is sent; the page ends short and the log says why.
		rq.h.cfg.Logger.Error("inbox: render " + page + ": " + err.Error())
	}
}

// fail answers status with a page holding msg, a sentence of ours (never visitor text).
func (rq *request) fail(status int, msg string) {
	l := rq.layout("error")
	l.Error, l.Status = msg, status
	rq.render(status, "error", struct{ L layout }{l})
}

// flashes are the sentences an action's redirect may ask the next page to show.
var flashes = map[string]string{
	"retried":  "The delivery is queued and will be sent now.",
	"released": "The submission is accepted; its deliveries are queued.",
	"spam":     "The submission is marked as spam; its unsent deliveries are skipped.",
	"erased":   "The submission and its deliveries are erased.",
	"unlisted": "The address is removed from the suppression list.",
	"parked":   "The destination is parked: its deliveries wait until you unpark it.",
	"unparked": "The destination is unparked: its held deliveries are being sent in order.",
}

func flashText(r *http.Request) string {
	done := r.URL.Query().Get("done")
	if done == "bulk" {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 {
			return ""
		}
		if n == 1 {
			return "1 dead delivery is queued again."
		}
		return strconv.Itoa(n) + " dead deliveries are queued again."
	}
	return flashes[done]
}

type overviewRow struct {
	Form                        string
	Counts                      map[string][3]int64 // status -> today, week, all
	Pending, Failed, Dead, Live int64
}

func (h *Handler) overview(rq *request) {
	ctx, cancel := rq.ctx()
	defer cancel()
	now := h.cfg.Now().UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	ov, err := h.cfg.Store.Overview(ctx, h.cfg.Forms, day, day.AddDate(0, 0, -6))
	if err != nil {
		rq.storeFailed(err)
		return
	}
	st, err := h.cfg.Store.Stats(ctx, now)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	rows := map[string]*overviewRow{}
	var order []string
	row := func(form string) *overviewRow {
		if r, ok := rows[form]; ok {
			return r
		}
		r := &overviewRow{Form: form, Counts: map[string][3]int64{}}
		rows[form], order = r, append(order, form)
		return r
	}
	for _, f := range h.cfg.Forms {
		row(f)
	}
	for _, c := range ov.Submissions {
		key := string(c.Status)
		if c.Test {
			key = "test"
		}
		r := row(c.Form)
		v := r.Counts[key]
		v[0], v[1], v[2] = v[0]+c.Today, v[1]+c.Week, v[2]+c.All
		r.Counts[key] = v
	}
	for _, d := range ov.Deliveries {
		r := row(d.Form)
		switch d.Status {
		case outbox.DeliveryPending:
			r.Pending += d.Count
		case outbox.DeliveryFailed:
			r.Failed += d.Count
		case outbox.DeliverySending:
			r.Live += d.Count
		case outbox.DeliveryDead:
			r.Dead += d.Count
		}
	}
	slices.Sort(order)
	ledger, err := h.cfg.Ledger(ctx, order, ledgerChartDays)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	data := struct {
		L          layout
		Rows       []*overviewRow
		Statuses   []string
		Stats      outbox.Stats
		OldestDue  string
		Health     Health
		HasHealth  bool
		Charts     []ledgerChart
		ChartDays  int
		Mismatched int
		Canary     []outbox.CanaryResult
	}{L: rq.layout("overview"), Statuses: []string{"accepted", "spam", "quarantined", "test"}, Stats: st,
		Charts: ledgerCharts(ledger, order, now), ChartDays: ledgerChartDays, Mismatched: len(ledger.Mismatched())}
	for _, f := range order {
		data.Rows = append(data.Rows, rows[f])
	}
	if age := st.OldestDueAge(now); age > 0 {
		data.OldestDue = age.Round(time.Second).String()
	}
	if h.cfg.Health != nil {
		data.Health, data.HasHealth = h.cfg.Health(ctx), true
	}
	if data.Canary, err = h.canaries(ctx); err != nil {
		rq.storeFailed(err)
		return
	}
	rq.render(http.StatusOK, "overview", data)
}

// canaries are the last canary verdicts of the inbox's forms (all without Forms).
func (h *Handler) canaries(ctx context.Context) ([]outbox.CanaryResult, error) {
	if h.cfg.Canary == nil {
		return nil, nil
	}
	rs, err := h.cfg.Canary(ctx)
	if err != nil || len(h.cfg.Forms) == 0 {
		return rs, err
	}
	var out []outbox.CanaryResult
	for _, r := range rs {
		if slices.Contains(h.cfg.Forms, r.Form) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (h *Handler) list(rq *request) {
	f := readFilter(rq.r.URL.Query())
	sf, ferr := h.storeFilter(f)
	data := struct {
		L        layout
		F        filter
		Forms    []string
		Items    []outbox.Submission
		NextURL  string
		Problem  string
		Statuses []string
		// NoticesHidden: the alert notices are left out of this unfiltered list.
		NoticesHidden bool
	}{L: rq.layout("list"), F: f, Statuses: []string{"accepted", "spam", "quarantined"}}
	ctx, cancel := rq.ctx()
	defer cancel()
	// The form choices are the configured forms, else the stored ones: a few index seeks
	// (SubmissionForms), never a count over every submission, on every page.
	data.Forms = h.cfg.Forms
	if len(data.Forms) == 0 {
		forms, err := h.cfg.Store.SubmissionForms(ctx)
		if err != nil {
			rq.storeFailed(err)
			return
		}
		data.Forms = forms
	}
	if ferr != nil {
		data.Problem = ferr.Error()
		rq.render(http.StatusBadRequest, "list", data)
		return
	}
	// Alert notices (form outbox.AlertsForm, docs/design.md "Alerts") are not leads: the
	// unfiltered list of every form leaves them out; choosing their form, a delivery
	// state (a dead notice shows under "Dead"), a status or a search lists them.
	if !f.Active() && len(h.cfg.Forms) == 0 && slices.Contains(data.Forms, outbox.AlertsForm) {
		sf.Forms = slices.DeleteFunc(slices.Clone(data.Forms), func(s string) bool { return s == outbox.AlertsForm })
		data.NoticesHidden = true
		if len(sf.Forms) == 0 {
			rq.render(http.StatusOK, "list", data)
			return
		}
	}
	items, next, err := h.cfg.Store.SearchSubmissions(ctx, sf)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	data.Items = items
	if next != "" {
		q := f.values()
		q.Set("cursor", next)
		data.NextURL = h.cfg.BasePath + "/submissions?" + q.Encode()
	}
	rq.render(http.StatusOK, "list", data)
}

type deliveryRow struct {
	outbox.Delivery
	Attempts  []outbox.Attempt
	Feedback  []outbox.Feedback
	Retryable bool
}

// recentRemovals is how many suppression removals the suppression page lists, newest
// first: the audit trail of an action that belongs to no submission.
const recentRemovals = 20

type removalRow struct {
	Address, User string
	At            time.Time
}

type eventRow struct {
	Kind string
	At   time.Time
	User string
	Note string
}

func (h *Handler) detail(rq *request, raw string) {
	ctx, cancel := rq.ctx()
	defer cancel()
	sub, ok := rq.submission(ctx, raw)
	if !ok {
		return
	}
	ds, err := h.cfg.Store.ListDeliveries(ctx, sub.ID)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	files, err := h.cfg.Store.SubmissionFiles(ctx, sub.ID)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	data := struct {
		L          layout
		S          *outbox.Submission
		Files      []fileRow
		Deliveries []deliveryRow
		Events     []eventRow
		Violations []outbox.FieldError // which fields failed, for a schema violation
		Signals    []outbox.Signal     // the spam signals intake noticed
		Score      int                 // their weights' sum
		Releasable bool
		Spammable  bool
	}{L: rq.layout("list"), S: sub,
		Releasable: sub.Status == outbox.SubmissionQuarantined || sub.Status == outbox.SubmissionSpam,
		Spammable:  sub.Status == outbox.SubmissionAccepted}
	for _, f := range files {
		data.Files = append(data.Files, fileRow{File: f, Download: f.HasContent})
	}
	for _, d := range ds {
		row := deliveryRow{Delivery: d, Retryable: d.Status == outbox.DeliveryDead || d.Status == outbox.DeliveryFailed}
		if row.Attempts, err = h.cfg.Store.ListAttempts(ctx, d.ID); err != nil {
			rq.storeFailed(err)
			return
		}
		if row.Feedback, err = h.cfg.Store.ListFeedback(ctx, d.ID); err != nil {
			rq.storeFailed(err)
			return
		}
		data.Deliveries = append(data.Deliveries, row)
	}
	evs, err := h.cfg.Store.SubmissionEvents(ctx, sub.ID)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	for _, e := range evs {
		data.Events = append(data.Events, newEventRow(e))
		if e.Kind == outbox.EventSubmissionReceived {
			// A malformed record shows the submission without its signals, as an
			// unreadable violation does below.
			data.Score, data.Signals, _ = outbox.ReceivedSignals(e.Data)
		}
		if e.Kind == outbox.EventSchemaViolation {
			var v outbox.SchemaViolationData
			_ = json.Unmarshal(e.Data, &v) // a malformed one leaves the reason alone on the page
			data.Violations = v.Errors
		}
	}
	rq.render(http.StatusOK, "detail", data)
}

// newEventRow reads the user of an operator action and a few plain facts of the others.
func newEventRow(e outbox.Event) eventRow {
	var d struct {
		User       string `json:"user"`
		Route      string `json:"route"`
		Reason     string `json:"reason"`
		FromStatus string `json:"from_status"`
		Address    string `json:"address"`
		Errors     []outbox.FieldError
	}
	_ = json.Unmarshal(e.Data, &d) // an event without these members shows its kind alone
	row := eventRow{Kind: e.Kind, At: e.At, User: d.User}
	switch {
	case len(d.Errors) > 0:
		fields := make([]string, 0, len(d.Errors))
		for _, fe := range d.Errors {
			if !slices.Contains(fields, fe.Field) {
				fields = append(fields, fe.Field)
			}
		}
		row.Note = "fields " + strings.Join(fields, ", ")
	case d.Address != "":
		row.Note = "address " + d.Address
	case d.Route != "" && d.Reason != "" && d.FromStatus == "":
		row.Note = "route " + d.Route + ": " + d.Reason // autoreply.skipped
	case d.Route != "":
		row.Note = "route " + d.Route
	case d.FromStatus != "":
		row.Note = "was " + d.FromStatus
	}
	return row
}

func (h *Handler) confirmErase(rq *request, raw string) {
	ctx, cancel := rq.ctx()
	defer cancel()
	sub, ok := rq.submission(ctx, raw)
	if !ok {
		return
	}
	rq.render(http.StatusOK, "erase", struct {
		L layout
		S *outbox.Submission
	}{rq.layout("list"), sub})
}

func (h *Handler) suppressions(rq *request) {
	ctx, cancel := rq.ctx()
	defer cancel()
	list, err := h.cfg.Store.ListSuppressions(ctx, outbox.MaxListLimit)
	if err != nil && !errors.Is(err, outbox.ErrNotFound) {
		rq.storeFailed(err)
		return
	}
	removed, err := h.cfg.Store.ListEvents(ctx, outbox.EventSuppressionRemoved, recentRemovals)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	data := struct {
		L       layout
		Items   []outbox.Suppression
		Removed []removalRow
	}{L: rq.layout("suppressions"), Items: list}
	for _, e := range removed {
		var d struct{ User, Address string }
		_ = json.Unmarshal(e.Data, &d) // a malformed one shows its time alone
		data.Removed = append(data.Removed, removalRow{Address: d.Address, User: d.User, At: e.At})
	}
	rq.render(http.StatusOK, "suppressions", data)
}
