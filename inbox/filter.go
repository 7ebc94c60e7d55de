package inbox

import (
	"fmt"
	"net/url"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// filter is the list's selection as the operator typed it, kept to redraw the form and
// to build links and the hidden fields of bulk actions.
type filter struct {
	Form     string
	Status   string
	Delivery string
	Since    string // YYYY-MM-DD
	Until    string // YYYY-MM-DD, inclusive
	Q        string
	Cursor   string
}

func readFilter(v url.Values) filter {
	return filter{
		Form: v.Get("form"), Status: v.Get("status"), Delivery: v.Get("delivery"),
		Since: v.Get("since"), Until: v.Get("until"), Q: v.Get("q"), Cursor: v.Get("cursor"),
	}
}

// values encodes the filter (without the cursor) for a link.
func (f filter) values() url.Values {
	v := url.Values{}
	for k, val := range map[string]string{"form": f.Form, "status": f.Status, "delivery": f.Delivery,
		"since": f.Since, "until": f.Until, "q": f.Q} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return v
}

// Query is the filter as a query string ("" when it selects everything).
func (f filter) Query() string { return f.values().Encode() }

// Active reports whether anything narrows the list.
func (f filter) Active() bool { return f.Query() != "" }

// maxSearch bounds a search term: a LIKE over every field value costs more with length
// and nobody searches their inbox for a paragraph.
const maxSearch = 200

// store turns the filter into the store's, refusing what it cannot mean with a sentence
// for the page. Forms this inbox does not show are refused, not silently widened.
func (h *Handler) storeFilter(f filter) (outbox.InboxFilter, error) {
	out := outbox.InboxFilter{Forms: h.cfg.Forms, Search: f.Q, Cursor: f.Cursor}
	if f.Form != "" {
		if !h.shows(f.Form) {
			return out, fmt.Errorf("this inbox does not show the form %q", f.Form)
		}
		out.Forms = []string{f.Form}
	}
	switch s := outbox.SubmissionStatus(f.Status); s {
	case "", outbox.SubmissionAccepted, outbox.SubmissionSpam, outbox.SubmissionQuarantined:
		out.Status = s
	default:
		return out, fmt.Errorf("status %q: choose accepted, spam or quarantined", f.Status)
	}
	switch d := outbox.DeliveryState(f.Delivery); d {
	case "", outbox.DeliveryStateDead, outbox.DeliveryStatePending:
		out.Delivery = d
	default:
		return out, fmt.Errorf("delivery %q: choose dead or pending", f.Delivery)
	}
	var err error
	if out.Since, err = parseDay(f.Since); err != nil {
		return out, fmt.Errorf("from: %w", err)
	}
	until, err := parseDay(f.Until)
	if err != nil {
		return out, fmt.Errorf("to: %w", err)
	}
	if !until.IsZero() {
		out.Until = until.AddDate(0, 0, 1) // the "to" day is included
	}
	if len(f.Q) > maxSearch {
		return out, fmt.Errorf("the search is longer than %d characters", maxSearch)
	}
	if _, err := outbox.ParseCursor(f.Cursor); err != nil {
		return out, fmt.Errorf("this page link is damaged; start from the first page")
	}
	return out, nil
}

func parseDay(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return t, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	return t, nil
}
