package adminapi

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The submission and delivery routes:
//
//	GET    /form_outbox/submissions[?form&status&since&until&limit&cursor]
//	GET    /form_outbox/submissions/{id}           with deliveries, history and feedback
//	DELETE /form_outbox/submissions/{id}           erasure
//	POST   /form_outbox/submissions/{id}/release   spam or quarantine to accepted
//	GET    /form_outbox/deliveries[?status&limit&cursor]
//	GET    /form_outbox/deliveries/{id}
//	POST   /form_outbox/deliveries/{id}/retry
//	GET    /form_outbox/ledger[?form&days]          the lead ledger (ledger.go)

// adminTimeout bounds the store work of one admin request (exports excepted: they stream).
const adminTimeout = 30 * time.Second

func adminCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), adminTimeout)
}

func serveListSubmissions(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	f, err := submissionFilter(r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	o := b.Store()
	ctx, cancel := adminCtx(r)
	defer cancel()
	subs, next, err := o.ListSubmissions(ctx, f)
	if err != nil {
		return storeError(err)
	}
	page := Page[Submission]{Items: make([]Submission, 0, len(subs)), Next: next}
	for i := range subs {
		page.Items = append(page.Items, newSubmission(&subs[i]))
	}
	return writeJSON(w, http.StatusOK, page)
}

func serveShowSubmission(b Backend, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	ctx, cancel := adminCtx(r)
	defer cancel()
	store := b.Store()
	sub, err := store.GetSubmission(ctx, id)
	if err != nil {
		return storeError(err)
	}
	ds, err := store.ListDeliveries(ctx, id)
	if err != nil {
		return storeError(err)
	}
	if sub.Files, err = store.SubmissionFiles(ctx, id); err != nil {
		return storeError(err)
	}
	v := newSubmission(sub)
	for _, d := range ds {
		dv, err := deliveryWithHistory(ctx, store, d)
		if err != nil {
			return err
		}
		v.Deliveries = append(v.Deliveries, dv)
	}
	return writeJSON(w, http.StatusOK, v)
}

func deliveryWithHistory(ctx context.Context, store outbox.Store, d outbox.Delivery) (Delivery, error) {
	dv := newDelivery(d)
	as, err := store.ListAttempts(ctx, d.ID)
	if err != nil {
		return dv, storeError(err)
	}
	for _, at := range as {
		dv.History = append(dv.History, newAttempt(at))
	}
	return dv, addFeedback(ctx, store, d, &dv)
}

func serveDeleteSubmission(b Backend, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	o := b.Store()
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := o.DeleteSubmission(ctx, id, time.Now()); err != nil {
		return storeError(err)
	}
	b.Logger().Info("submission erased by admin request", zap.String("submission_id", id.String()))
	return writeJSON(w, http.StatusOK, map[string]string{"id": id.String(), "result": "erased"})
}

func serveReleaseSubmission(b Backend, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	o := b.Store()
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := o.ReleaseSubmission(ctx, id, time.Now()); err != nil {
		return storeError(err)
	}
	b.Wake(ctx)
	b.Logger().Info("submission released by admin request", zap.String("submission_id", id.String()))
	return writeJSON(w, http.StatusOK, map[string]string{"id": id.String(), "result": "released"})
}

func serveListDeliveries(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	f, err := deliveryFilter(r.URL.Query())
	if err != nil {
		return err
	}
	o := b.Store()
	ctx, cancel := adminCtx(r)
	defer cancel()
	ds, next, err := o.ListDeliveriesByStatus(ctx, f)
	if err != nil {
		return storeError(err)
	}
	page := Page[Delivery]{Items: make([]Delivery, 0, len(ds)), Next: next}
	for _, d := range ds {
		page.Items = append(page.Items, newDelivery(d))
	}
	return writeJSON(w, http.StatusOK, page)
}

func serveShowDelivery(b Backend, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	ctx, cancel := adminCtx(r)
	defer cancel()
	d, err := b.Store().GetDelivery(ctx, id)
	if err != nil {
		return storeError(err)
	}
	dv, err := deliveryWithHistory(ctx, b.Store(), *d)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dv)
}

func serveRetryDelivery(b Backend, w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := b.Store().Retry(ctx, id, time.Now()); err != nil {
		return storeError(err)
	}
	b.Wake(ctx)
	b.Logger().Info("delivery retry requested by admin", zap.String("delivery_id", id.String()))
	return writeJSON(w, http.StatusOK, map[string]string{"id": id.String(), "result": "pending"})
}
