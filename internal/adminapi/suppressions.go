package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// The suppression list on the admin API:
//
//	GET    /form_outbox/suppressions[?limit=N]      newest first
//	POST   /form_outbox/suppressions                {"address": "...", "reason": "..."}
//	DELETE /form_outbox/suppressions                {"address": "..."}: send to it again
//
// Addresses travel in bodies, never in the URL: Caddy's admin server logs request URIs.

type suppressionView struct {
	Address    string    `json:"address"`
	Reason     string    `json:"reason"`
	DeliveryID string    `json:"delivery_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// addFeedback fills a delivery view's post-send feedback.
func addFeedback(ctx context.Context, store outbox.Store, d outbox.Delivery, dv *Delivery) error {
	list, err := store.ListFeedback(ctx, d.ID)
	if err != nil {
		return storeError(err)
	}
	for _, f := range list {
		dv.Feedback = append(dv.Feedback, Feedback{Source: f.Source, Kind: string(f.Kind),
			BounceType: f.BounceType, Diagnostic: f.Diagnostic, ProviderMessageID: f.ProviderMessageID,
			OccurredAt: f.OccurredAt, ReceivedAt: f.ReceivedAt})
	}
	return nil
}

func serveListSuppressions(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	fs := b.Store()
	q := r.URL.Query()
	if err := onlyParams(q, "limit"); err != nil {
		return err
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return apiError(http.StatusBadRequest, fmt.Errorf("limit %q: want a positive number", v))
		}
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	list, err := fs.ListSuppressions(ctx, limit)
	if err != nil {
		return storeError(err)
	}
	out := []suppressionView{}
	for _, s := range list {
		v := suppressionView{Address: s.Address, Reason: s.Reason, CreatedAt: s.CreatedAt}
		if s.DeliveryID != uuid.Nil {
			v.DeliveryID = s.DeliveryID.String()
		}
		out = append(out, v)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"suppressions": out})
}

func serveAddSuppression(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	fs := b.Store()
	in, err := readSuppressionBody(r)
	if err != nil {
		return err
	}
	if in.Reason == "" {
		in.Reason = "manual"
	}
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := fs.AddSuppression(ctx, outbox.Suppression{Address: in.Address, Reason: in.Reason, CreatedAt: time.Now()}); err != nil {
		return storeError(err)
	}
	b.Logger().Info("address suppressed by admin request")
	return writeJSON(w, http.StatusOK, map[string]string{"address": outbox.NormalizeAddress(in.Address), "result": "suppressed"})
}

func serveRemoveSuppression(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	fs := b.Store()
	in, err := readSuppressionBody(r)
	if err != nil {
		return err
	}
	addr := in.Address
	ctx, cancel := adminCtx(r)
	defer cancel()
	if err := fs.RemoveSuppression(ctx, addr); err != nil {
		// The address stays out of the message: Caddy logs admin errors.
		if errors.Is(err, outbox.ErrNotFound) {
			return apiError(http.StatusNotFound, errors.New("address is not suppressed"))
		}
		return storeError(err)
	}
	b.Logger().Info("address removed from the suppression list by admin request", zap.Bool("removed", true))
	return writeJSON(w, http.StatusOK, map[string]string{"address": outbox.NormalizeAddress(addr), "result": "removed"})
}

type suppressionBody struct {
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

// readSuppressionBody reads {"address": ..., "reason": ...}; the address must parse.
func readSuppressionBody(r *http.Request) (suppressionBody, error) {
	var in suppressionBody
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, apiError(http.StatusBadRequest, fmt.Errorf("want {\"address\": \"...\"}: %w", err))
	}
	if _, err := mail.ParseAddress(in.Address); err != nil {
		return in, apiError(http.StatusBadRequest, errors.New("address is not an email address"))
	}
	return in, nil
}
