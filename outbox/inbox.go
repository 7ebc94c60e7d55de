package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/jsonw"
)

// ErrNotSpammable means a submission asked to be marked as spam is not an accepted one.
var ErrNotSpammable = errors.New("outbox: submission is not accepted")

// Event kinds written by the operator's inbox (inbox/). Release and erase reuse
// EventSubmissionReleased and EventSubmissionErased; every one of them names the acting
// user in its data ("user"), which is the inbox's audit trail.
const (
	EventDeliveryRetried      = "delivery.retried"
	EventSubmissionMarkedSpam = "submission.marked_spam"
	// EventSuppressionRemoved names the address taken off the suppression list; it is
	// about the delivery whose bounce or complaint listed it (and that delivery's
	// submission), when the store still has them.
	EventSuppressionRemoved = "suppression.removed"
)

// ReasonOperator is the reason of a submission an operator marked as spam.
const ReasonOperator = "operator"

// DeliveryState filters submissions by the state of their deliveries.
type DeliveryState string

const (
	// DeliveryStateDead: at least one delivery is dead.
	DeliveryStateDead DeliveryState = "dead"
	// DeliveryStatePending: at least one delivery is still to be sent (pending, failed
	// with a retry scheduled, or being sent).
	DeliveryStatePending DeliveryState = "pending"
)

// InboxFilter selects submissions for the operator's inbox. Zero fields do not filter.
type InboxFilter struct {
	Forms    []string // any of these forms
	Status   SubmissionStatus
	Delivery DeliveryState
	Since    time.Time // created_at >= Since
	Until    time.Time // created_at < Until
	// Search matches submissions with a field value containing it, ignoring ASCII case.
	Search string
	Limit  int    // PageLimit applies
	Cursor string // from the previous page
}

// InboxFilter is the same selection in the inbox's terms.
func (f SubmissionFilter) InboxFilter() InboxFilter {
	out := InboxFilter{Status: f.Status, Since: f.Since, Until: f.Until, Limit: f.Limit, Cursor: f.Cursor}
	if f.Form != "" {
		out.Forms = []string{f.Form}
	}
	return out
}

// FormCount counts one form's submissions of one status (test ones apart).
type FormCount struct {
	Form   string
	Status SubmissionStatus
	Test   bool
	Today  int64 // created_at >= the day start given to Overview
	Week   int64 // created_at >= the week start given to Overview
	All    int64
}

// FormDeliveries counts one form's deliveries of one unfinished status (pending,
// sending, failed, dead).
type FormDeliveries struct {
	Form   string
	Status DeliveryStatus
	Count  int64
}

// Overview is the inbox's first page in numbers.
type Overview struct {
	Submissions []FormCount      // ordered by form, status, test
	Deliveries  []FormDeliveries // ordered by form, status
}

// ActionKind is what an operator does to a submission or a delivery.
type ActionKind string

const (
	ActionRetry    ActionKind = "retry"   // a dead or failed delivery: pending again, due now
	ActionRelease  ActionKind = "release" // a quarantined or spam submission: accepted
	ActionMarkSpam ActionKind = "spam"    // an accepted submission: spam, unsent deliveries skipped
	ActionErase    ActionKind = "erase"   // a submission with everything it owns
	// ActionUnsuppress takes Address off the suppression list (ErrNotFound when it is not
	// listed), so email to it is sent again.
	ActionUnsuppress ActionKind = "unsuppress"
)

// Action is one operator action. The store applies it and records its audit event in
// one transaction, so the trail never shows an action that did not happen, nor misses
// one that did.
type Action struct {
	Kind         ActionKind
	SubmissionID uuid.UUID // release, spam, erase
	DeliveryID   uuid.UUID // retry
	Address      string    // unsuppress
	// User is the authenticated operator, written into the event.
	User string
	Now  time.Time
}

// Inbox is the part of Store that the operator's inbox needs beyond Ops.
type Inbox interface {
	// SearchSubmissions returns submissions matching f newest first (created_at, then id,
	// descending) with keyset paging, and the next page's cursor ("" on the last page).
	SearchSubmissions(ctx context.Context, f InboxFilter) ([]Submission, string, error)
	// SubmissionForms returns the forms that have submissions, sorted: the list's form
	// choices. It must not cost a scan of the submissions (both stores skip through the
	// form index), since the list page asks for it on every request.
	SubmissionForms(ctx context.Context) ([]string, error)
	// Overview counts submissions per form and status since dayStart, since weekStart
	// and in all, and unfinished deliveries per form and status. forms, when not empty,
	// limits it to those forms.
	Overview(ctx context.Context, forms []string, dayStart, weekStart time.Time) (Overview, error)
	// SubmissionEvents returns the events about one submission, oldest first.
	SubmissionEvents(ctx context.Context, id uuid.UUID) ([]Event, error)
	// Act applies a and records its event in one transaction. ErrNotFound,
	// ErrNotRetryable, ErrNotReleasable, ErrNotSpammable.
	Act(ctx context.Context, a Action) error
}

// ActionEvent is the audit event of a, given the submission's form (and for a retry the
// delivery's route), decided once here so both stores write the same thing. It holds ids,
// the form, the route and the user, never visitor data: erasure must leave none behind.
// The one exception is the address an unsuppress names, which the suppression list held
// apart from any submission anyway (erasing a submission does not empty that list).
func ActionEvent(a Action, form, route, fromStatus, reason string) (Event, error) {
	kind := map[ActionKind]string{
		ActionRetry:      EventDeliveryRetried,
		ActionRelease:    EventSubmissionReleased,
		ActionMarkSpam:   EventSubmissionMarkedSpam,
		ActionErase:      EventSubmissionErased,
		ActionUnsuppress: EventSuppressionRemoved,
	}[a.Kind]
	if kind == "" {
		return Event{}, fmt.Errorf("outbox: unknown action %q", a.Kind)
	}
	data, err := json.Marshal(actionEventData{User: a.User, Form: form, Route: route, FromStatus: fromStatus,
		Reason: reason, Address: a.Address})
	if err != nil {
		return Event{}, err
	}
	return Event{Kind: kind, SubmissionID: a.SubmissionID, DeliveryID: a.DeliveryID, Data: data, At: a.Now}, nil
}

type actionEventData struct {
	User       string `json:"user,omitempty"`
	Form       string `json:"form,omitempty"`
	Route      string `json:"route,omitempty"`
	FromStatus string `json:"from_status,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Address    string `json:"address,omitempty"`
}

// LikePattern makes a LIKE pattern that matches values containing s, escaping LIKE's
// wildcards with a backslash (both stores use ESCAPE '\').
func LikePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// RawSearchable reports whether a search for s may first be narrowed to the submissions
// whose stored field JSON contains s (a LIKE over the text, no decoding), before the exact
// test on decoded values. That is sound when the encoder copies s unescaped: the fields
// are written by Fields.AppendJSON, which escapes rune by rune, so a value containing s
// is stored with s in its text; and folding ASCII case is the same on both sides. The
// narrowing only ever lets more rows through (a field name may match), never fewer.
func RawSearchable(s string) bool { return jsonw.Verbatim(s) }
