package storeflow

import (
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Cond is one condition of a filtered read: the name of a fragment of the store's
// queries/*.sql (one of PageFragments) and its arguments as outbox values (string,
// []string, time.Time, uuid.UUID), which the driver encodes for its dialect.
type Cond struct {
	Name string
	Args []any
}

// Page is one page of a filtered read: its conditions, joined by AND in this order, and
// how many rows to fetch, one more than the page holds (outbox.TrimPage then tells
// whether another page follows).
type Page struct {
	Conds []Cond
	Limit int // outbox.PageLimit of the filter's
	Fetch int // Limit + 1
}

// PageFragments are the condition fragments the pages below name; a store looks them
// up once (sqlq's MustMap) and builds its query from them.
var PageFragments = []string{
	"FormIn", "SearchStatusIs", "SearchDeliveryDead", "SearchDeliveryPending", "SearchSince",
	"SearchUntil", "SearchRawText", "SearchFieldValue", "SearchBeforeCursor",
	"DeliveryStatusIs", "DeliveryBeforeCursor",
}

func (p *Page) where(name string, args ...any) {
	p.Conds = append(p.Conds, Cond{Name: name, Args: args})
}

func newPage(limit int) Page {
	l := outbox.PageLimit(limit)
	return Page{Limit: l, Fetch: l + 1}
}

// SubmissionsPage is the inbox search's page for f (outbox.Inbox.SearchSubmissions),
// newest first with a keyset cursor. The search narrows on the stored text first when
// that is sound (outbox.RawSearchable), then tests the decoded field values.
func SubmissionsPage(f outbox.InboxFilter) (Page, error) {
	cur, err := outbox.ParseCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	p := newPage(f.Limit)
	if len(f.Forms) > 0 {
		p.where("FormIn", f.Forms)
	}
	if f.Status != "" {
		p.where("SearchStatusIs", string(f.Status))
	}
	switch f.Delivery {
	case "":
	case outbox.DeliveryStateDead:
		p.where("SearchDeliveryDead")
	case outbox.DeliveryStatePending:
		p.where("SearchDeliveryPending")
	default:
		return Page{}, fmt.Errorf("unknown delivery state %q", f.Delivery)
	}
	if !f.Since.IsZero() {
		p.where("SearchSince", f.Since)
	}
	if !f.Until.IsZero() {
		p.where("SearchUntil", f.Until)
	}
	if f.Search != "" {
		if outbox.RawSearchable(f.Search) {
			p.where("SearchRawText", outbox.LikePattern(f.Search))
		}
		p.where("SearchFieldValue", outbox.LikePattern(f.Search))
	}
	if !cur.IsZero() {
		p.where("SearchBeforeCursor", cur.At, cur.ID)
	}
	return p, nil
}

// DeliveriesPage is the page of deliveries in f.Status (every status when empty),
// latest next_attempt_at first (outbox.Ops.ListDeliveriesByStatus).
func DeliveriesPage(f outbox.DeliveryFilter) (Page, error) {
	cur, err := outbox.ParseCursor(f.Cursor)
	if err != nil {
		return Page{}, err
	}
	p := newPage(f.Limit)
	if f.Status != "" {
		p.where("DeliveryStatusIs", string(f.Status))
	}
	if !cur.IsZero() {
		p.where("DeliveryBeforeCursor", cur.At, cur.ID)
	}
	return p, nil
}
