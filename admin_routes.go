package formoutbox

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// adminTimeout bounds the store work of one admin request (exports excepted: they stream).
const adminTimeout = 30 * time.Second

func adminCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), adminTimeout)
}

// submissionFilter reads form, status, since, until, limit and cursor. Unknown
// parameters are refused, so a typo never silently widens a query.
func submissionFilter(q url.Values, now time.Time, extra ...string) (outbox.SubmissionFilter, error) {
	var f outbox.SubmissionFilter
	if err := onlyParams(q, append([]string{"form", "status", "since", "until", "limit", "cursor"}, extra...)...); err != nil {
		return f, err
	}
	f.Form = q.Get("form")
	switch s := outbox.SubmissionStatus(q.Get("status")); s {
	case "", outbox.SubmissionAccepted, outbox.SubmissionSpam, outbox.SubmissionQuarantined:
		f.Status = s
	default:
		return f, apiError(http.StatusBadRequest, fmt.Errorf("status %q: want accepted, spam or quarantined", s))
	}
	var err error
	if f.Since, err = parseWhen(q.Get("since"), now); err != nil {
		return f, apiError(http.StatusBadRequest, fmt.Errorf("since: %w", err))
	}
	if f.Until, err = parseWhen(q.Get("until"), now); err != nil {
		return f, apiError(http.StatusBadRequest, fmt.Errorf("until: %w", err))
	}
	if f.Limit, err = parseLimit(q.Get("limit")); err != nil {
		return f, err
	}
	f.Cursor = q.Get("cursor")
	if _, err := outbox.ParseCursor(f.Cursor); err != nil {
		return f, apiError(http.StatusBadRequest, err)
	}
	return f, nil
}

func onlyParams(q url.Values, allowed ...string) error {
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return apiError(http.StatusBadRequest, fmt.Errorf("unknown parameter %q (allowed: %v)", k, allowed))
		}
	}
	return nil
}

// parseWhen reads an RFC 3339 time, a date (YYYY-MM-DD, UTC midnight) or a duration
// meaning that long ago ("24h", "7d").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := caddy.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a date (2006-01-02) or a duration ago (24h, 7d)", s)
}

func parseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > outbox.MaxListLimit {
		return 0, apiError(http.StatusBadRequest, fmt.Errorf("limit %q: want 1..%d", s, outbox.MaxListLimit))
	}
	return n, nil
}

func serveListSubmissions(a *App, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	f, err := submissionFilter(r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	o, err := a.ops()
	if err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	subs, next, err := o.ListSubmissions(ctx, f)
	if err != nil {
		return storeError(err)
	}
	page := pageView[submissionView]{Items: make([]submissionView, 0, len(subs)), Next: next}
	for i := range subs {
		page.Items = append(page.Items, newSubmissionView(&subs[i]))
	}
	return writeJSON(w, http.StatusOK, page)
}

func serveShowSubmission(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	ctx, cancel := adminCtx(r)
	defer cancel()
	sub, err := a.store.GetSubmission(ctx, id)
	if err != nil {
		return storeError(err)
	}
	ds, err := a.store.ListDeliveries(ctx, id)
	if err != nil {
		return storeError(err)
	}
	v := newSubmissionView(sub)
	for _, d := range ds {
		dv, err := a.deliveryWithHistory(ctx, d)
		if err != nil {
			return err
		}
		v.Deliveries = append(v.Deliveries, dv)
	}
	return writeJSON(w, http.StatusOK, v)
}

func (a *App) deliveryWithHistory(ctx context.Context, d outbox.Delivery) (deliveryView, error) {
	dv := newDeliveryView(d)
	as, err := a.store.ListAttempts(ctx, d.ID)
	if err != nil {
		return dv, storeError(err)
	}
	for _, at := range as {
		dv.History = append(dv.History, newAttemptView(at))
	}
	return dv, a.addFeedback(ctx, &dv)
}

func serveDeleteSubmission(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	o, err := a.ops()
	if err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := o.DeleteSubmission(ctx, id, time.Now()); err != nil {
		return storeError(err)
	}
	a.logger.Info("submission erased by admin request", zap.String("submission_id", id.String()))
	return writeJSON(w, http.StatusOK, map[string]string{"id": id.String(), "result": "erased"})
}

func serveReleaseSubmission(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	o, err := a.ops()
	if err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := o.ReleaseSubmission(ctx, id, time.Now()); err != nil {
		return storeError(err)
	}
	a.worker.Broadcast(ctx)
	a.logger.Info("submission released by admin request", zap.String("submission_id", id.String()))
	return writeJSON(w, http.StatusOK, map[string]string{"id": id.String(), "result": "released"})
}

func serveListDeliveries(a *App, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	q := r.URL.Query()
	if err := onlyParams(q, "status", "limit", "cursor"); err != nil {
		return err
	}
	f := outbox.DeliveryFilter{Status: outbox.DeliveryStatus(q.Get("status")), Cursor: q.Get("cursor")}
	switch f.Status {
	case "", outbox.DeliveryPending, outbox.DeliverySending, outbox.DeliveryFailed,
		outbox.DeliverySent, outbox.DeliveryDead, outbox.DeliverySkipped:
	default:
		return apiError(http.StatusBadRequest, fmt.Errorf("status %q: want pending, sending, failed, sent, dead or skipped", f.Status))
	}
	var err error
	if f.Limit, err = parseLimit(q.Get("limit")); err != nil {
		return err
	}
	if _, err := outbox.ParseCursor(f.Cursor); err != nil {
		return apiError(http.StatusBadRequest, err)
	}
	o, err := a.ops()
	if err != nil {
		return err
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	ds, next, err := o.ListDeliveriesByStatus(ctx, f)
	if err != nil {
		return storeError(err)
	}
	page := pageView[deliveryView]{Items: make([]deliveryView, 0, len(ds)), Next: next}
	for _, d := range ds {
		page.Items = append(page.Items, newDeliveryView(d))
	}
	return writeJSON(w, http.StatusOK, page)
}

func serveShowDelivery(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	ctx, cancel := adminCtx(r)
	defer cancel()
	d, err := a.store.GetDelivery(ctx, id)
	if err != nil {
		return storeError(err)
	}
	dv, err := a.deliveryWithHistory(ctx, *d)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dv)
}

func serveRetryDelivery(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := a.store.Retry(ctx, id, time.Now()); err != nil {
		return storeError(err)
	}
	a.worker.Broadcast(ctx)
	a.logger.Info("delivery retry requested by admin", zap.String("delivery_id", id.String()))
	return writeJSON(w, http.StatusOK, map[string]string{"id": id.String(), "result": "pending"})
}
