package inbox

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// act applies one action through the store (which writes the audit event naming the
// user in the same transaction) and logs ids and the user only.
func (rq *request) act(a outbox.Action) error {
	ctx, cancel := rq.ctx()
	defer cancel()
	a.User, a.Now = rq.user, rq.h.cfg.Now()
	if err := rq.h.cfg.Store.Act(ctx, a); err != nil {
		return err
	}
	rq.h.cfg.Logger.Info("inbox action", zap.String("action", string(a.Kind)), zap.String("user", rq.user),
		zap.Stringer("submission_id", a.SubmissionID), zap.Stringer("delivery_id", a.DeliveryID))
	if a.Kind == outbox.ActionRetry || a.Kind == outbox.ActionRelease {
		rq.h.cfg.Wake(ctx)
	}
	return nil
}

// actionFailed answers what went wrong with a sentence; 409 when the row is not in a
// state the action applies to (someone else acted first, or the worker moved on).
func (rq *request) actionFailed(err error) {
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		rq.fail(http.StatusNotFound, "There is no such submission or delivery (it may have been erased). Nothing was changed.")
	case errors.Is(err, outbox.ErrNotRetryable):
		rq.fail(http.StatusConflict, "This delivery is not dead or failed any more (it may be queued or sent already). Nothing was changed.")
	case errors.Is(err, outbox.ErrNotReleasable):
		rq.fail(http.StatusConflict, "This submission is not quarantined or spam any more. Nothing was changed.")
	case errors.Is(err, outbox.ErrNotSpammable):
		rq.fail(http.StatusConflict, "Only an accepted submission can be marked as spam. Nothing was changed.")
	default:
		rq.storeFailed(err)
	}
}

// redirect sends the browser (303, so it GETs) to a page of the inbox with a flash.
func (rq *request) redirect(path string, q url.Values) {
	u := rq.h.cfg.BasePath + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	http.Redirect(rq.w, rq.r, u, http.StatusSeeOther)
}

func (h *Handler) retry(rq *request, raw string) {
	id, err := uuid.Parse(raw)
	if err != nil {
		rq.fail(http.StatusNotFound, "There is no such delivery. Nothing was changed.")
		return
	}
	ctx, cancel := rq.ctx()
	defer cancel()
	d, err := h.cfg.Store.GetDelivery(ctx, id)
	if err != nil {
		rq.actionFailed(err)
		return
	}
	if _, ok := rq.submission(ctx, d.SubmissionID.String()); !ok {
		return
	}
	if err := rq.act(outbox.Action{Kind: outbox.ActionRetry, DeliveryID: id}); err != nil {
		rq.actionFailed(err)
		return
	}
	rq.redirect("/submissions/"+d.SubmissionID.String(), url.Values{"done": {"retried"}})
}

func (h *Handler) submissionAction(rq *request, raw, verb string) {
	kind, done := map[string]outbox.ActionKind{
		"release": outbox.ActionRelease, "spam": outbox.ActionMarkSpam, "erase": outbox.ActionErase,
	}[verb], verb
	if kind == "" {
		rq.fail(http.StatusNotFound, "There is no such action in the inbox.")
		return
	}
	if kind == outbox.ActionErase {
		done = "erased"
		if rq.r.PostFormValue("confirm") != "erase" {
			rq.fail(http.StatusBadRequest, "Erasing needs the confirmation step: open the submission and choose Erase. Nothing was changed.")
			return
		}
	}
	if verb == "release" {
		done = "released"
	}
	ctx, cancel := rq.ctx()
	defer cancel()
	sub, ok := rq.submission(ctx, raw)
	if !ok {
		return
	}
	if err := rq.act(outbox.Action{Kind: kind, SubmissionID: sub.ID}); err != nil {
		rq.actionFailed(err)
		return
	}
	if kind == outbox.ActionErase {
		rq.redirect("/submissions", url.Values{"done": {done}})
		return
	}
	rq.redirect("/submissions/"+sub.ID.String(), url.Values{"done": {done}})
}

// bulkRetry retries every dead delivery of the submissions the posted filter selects,
// one transaction per delivery (each with its own audit event), reading the filter a page
// at a time. A delivery that stopped being dead meanwhile is left alone.
func (h *Handler) bulkRetry(rq *request) {
	f := readFilter(rq.r.PostForm)
	f.Cursor = ""
	sf, err := h.storeFilter(f)
	if err != nil {
		rq.fail(http.StatusBadRequest, err.Error()+". Nothing was changed.")
		return
	}
	sf.Delivery, sf.Limit = outbox.DeliveryStateDead, outbox.MaxListLimit
	ctx, cancel := rq.ctx()
	defer cancel()
	n := 0
	for {
		page, next, err := h.cfg.Store.SearchSubmissions(ctx, sf)
		if err != nil {
			rq.bulkFailed(n, err)
			return
		}
		for _, sub := range page {
			ds, err := h.cfg.Store.ListDeliveries(ctx, sub.ID)
			if err != nil {
				rq.bulkFailed(n, err)
				return
			}
			for _, d := range ds {
				if d.Status != outbox.DeliveryDead {
					continue
				}
				err := rq.act(outbox.Action{Kind: outbox.ActionRetry, DeliveryID: d.ID})
				if errors.Is(err, outbox.ErrNotRetryable) || errors.Is(err, outbox.ErrNotFound) {
					continue
				}
				if err != nil {
					rq.bulkFailed(n, err)
					return
				}
				n++
			}
		}
		if next == "" {
			break
		}
		sf.Cursor = next
	}
	q := f.values()
	q.Set("done", "bulk")
	q.Set("n", strconv.Itoa(n))
	rq.redirect("/submissions", q)
}

// bulkFailed says how many retries were made before the store failed: those stand.
func (rq *request) bulkFailed(n int, err error) {
	rq.h.cfg.Logger.Error("inbox: bulk retry", zap.Int("retried", n), zap.Error(err))
	rq.fail(http.StatusServiceUnavailable, "The database stopped answering after "+strconv.Itoa(n)+
		" deliveries were queued again; those stand. Try again to queue the rest.")
}

// removeSuppression takes an address off the list through Act, so the removal and its
// event naming the user are one transaction, like every other action of the inbox.
func (h *Handler) removeSuppression(rq *request) {
	err := rq.act(outbox.Action{Kind: outbox.ActionUnsuppress, Address: rq.r.PostFormValue("address")})
	if errors.Is(err, outbox.ErrNotFound) {
		rq.fail(http.StatusNotFound, "That address is not on the suppression list. Nothing was changed.")
		return
	}
	if err != nil {
		rq.storeFailed(err)
		return
	}
	rq.redirect("/suppressions", url.Values{"done": {"unlisted"}})
}
