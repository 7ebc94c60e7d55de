package inbox

import (
	"errors"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The parked destinations page (docs/operations.md, "Parked destinations"): what is
// parked, why, since when, the next probe and the leads held, with an Unpark button per
// destination and a form to park one by its key. Plain forms with the CSRF token, so it
// works without JavaScript. Parking spans forms: an inbox limited to some forms shows
// the page without its buttons, since a park or unpark would act on other forms' leads.

func (h *Handler) parker() outbox.Parker {
	if h.cfg.Parker != nil {
		return h.cfg.Parker
	}
	return outbox.StoreParker{Store: h.cfg.Store, Now: h.cfg.Now}
}

func (h *Handler) destinations(rq *request) {
	ctx, cancel := rq.ctx()
	defer cancel()
	list, err := h.cfg.Store.ListParkedDestinations(ctx)
	if err != nil {
		rq.storeFailed(err)
		return
	}
	rq.render(http.StatusOK, "destinations", struct {
		L       layout
		Items   []outbox.ParkedDestination
		Actions bool
	}{L: rq.layout("destinations"), Items: list, Actions: len(h.cfg.Forms) == 0})
}

// destinationAction parks or unparks the posted key.
func (h *Handler) destinationAction(rq *request, verb string) {
	if len(h.cfg.Forms) > 0 {
		rq.fail(http.StatusForbidden, "This inbox shows some forms only; parking acts on every form's leads. Nothing was changed.")
		return
	}
	dest, err := outbox.ParseDestinationKey(rq.r.PostFormValue("key"))
	if err != nil {
		rq.fail(http.StatusBadRequest, err.Error()+". Nothing was changed.")
		return
	}
	ctx, cancel := rq.ctx()
	defer cancel()
	done := "parked"
	resumed := 0
	if verb == "park" {
		_, err = h.parker().ParkDestination(ctx, dest, rq.user)
	} else {
		done = "unparked"
		resumed, err = h.parker().UnparkDestination(ctx, dest.Key, rq.user)
	}
	if errors.Is(err, outbox.ErrNotParked) {
		rq.fail(http.StatusConflict, "That destination is not parked (a probe may have unparked it). Nothing was changed.")
		return
	}
	if err != nil {
		rq.storeFailed(err)
		return
	}
	h.cfg.Logger.Info("inbox action", zap.String("action", verb), zap.String("user", rq.user),
		zap.String("destination", dest.Key), zap.Int("resumed", resumed))
	if verb == "unpark" {
		h.cfg.Wake(ctx)
	}
	rq.redirect("/destinations", url.Values{"done": {done}})
}
