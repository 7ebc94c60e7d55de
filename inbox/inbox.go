// Package inbox is the operator's inbox: server-rendered pages that show every
// submission and every delivery of the outbox, and POST actions that act on them (retry,
// release, mark as spam, erase, export). It knows nothing of Caddy: the caller
// authenticates the operator and passes the user name to Serve, which is how
// inbox_handler.go in the repository root mounts it.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Health is what the overview shows about the running service.
type Health struct {
	// Problems are sentences naming what is wrong; none means healthy.
	Problems []string
	// SpoolOn tells whether the local spool exists; SpoolDepth is how many submissions
	// wait in it for the store.
	SpoolOn    bool
	SpoolDepth int64
	// Backup is one line on the off-host backup ("" without one), e.g. "backup failing:
	// 20 submissions not in the bucket, the oldest for 3m0s".
	Backup string
}

// Config is an inbox.
type Config struct {
	Store outbox.Store
	// BasePath is the path the inbox is served under ("/inbox"); every link starts with it.
	BasePath string
	// Forms limits the inbox to these forms; empty shows every form.
	Forms []string
	// Title heads every page.
	Title string
	// Wake, when set, is called after an action made deliveries due, so the worker sends
	// them now rather than at its next tick.
	Wake func(ctx context.Context)
	// Parker parks and unparks destinations (the running worker, so its copy of the
	// parked set changes at once); nil: the store alone (outbox.StoreParker).
	Parker outbox.Parker
	// Health, when set, feeds the overview's health verdict and spool depth.
	Health func(ctx context.Context) Health
	// Ledger, when set, reads the lead ledger of the last days UTC days for forms (the
	// App's, which knows which forms must deliver every post and the retention). Nil:
	// outbox.BuildLedger on Store, flagging only answers not stored.
	Ledger func(ctx context.Context, forms []string, days int) (outbox.Ledger, error)
	// Canary, when set, reads each configured route's last canary verdict for the
	// overview (outbox/canary).
	Canary func(ctx context.Context) ([]outbox.CanaryResult, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Logger gets store failures and one line per action (ids and the user, never
	// field values). Nil: zap.NewNop.
	Logger *zap.Logger
}

// Handler serves the inbox.
type Handler struct {
	cfg Config
}

// requestTimeout bounds the store work of one page or action (exports excepted: they
// stream for as long as the client reads).
const requestTimeout = 30 * time.Second

// New checks cfg and builds the handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("inbox: no store")
	}
	cfg.BasePath = "/" + strings.Trim(cfg.BasePath, "/")
	if cfg.BasePath == "/" {
		cfg.BasePath = ""
	}
	if cfg.Title == "" {
		cfg.Title = "Form inbox"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Ledger == nil {
		store, now := cfg.Store, cfg.Now
		cfg.Ledger = func(ctx context.Context, forms []string, days int) (outbox.Ledger, error) {
			return outbox.BuildLedger(ctx, store, outbox.LedgerQuery{Days: days, Now: now(), Forms: forms})
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Wake == nil {
		cfg.Wake = func(context.Context) {}
	}
	return &Handler{cfg: cfg}, nil
}

// Serve answers one request of the operator user, who the caller has authenticated.
// An empty user is refused: the inbox never serves an anonymous request.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, user string) {
	setSecurityHeaders(w)
	if user == "" {
		http.Error(w, "The inbox serves only authenticated operators.", http.StatusForbidden)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, h.cfg.BasePath)
	if !ok || (rest != "" && rest[0] != '/') {
		http.Error(w, fmt.Sprintf("This inbox lives under %s/.", h.cfg.BasePath), http.StatusNotFound)
		return
	}
	rest = strings.Trim(rest, "/")
	if rest == "static/inbox.css" {
		serveCSS(w, r)
		return
	}
	token := sessionToken(w, r, h.cfg.BasePath)
	rq := &request{h: h, w: w, r: r, user: user, token: token}
	if r.Method == http.MethodPost {
		if err := checkCSRF(r, token); err != nil {
			http.Error(w, "Refused: "+err.Error(), http.StatusForbidden)
			return
		}
		h.servePost(rq, rest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
		return
	}
	h.serveGet(rq, rest)
}

// request is one request being served.
type request struct {
	h     *Handler
	w     http.ResponseWriter
	r     *http.Request
	user  string
	token string
}

func (rq *request) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(rq.r.Context(), requestTimeout)
}

func (h *Handler) serveGet(rq *request, rest string) {
	parts := strings.Split(rest, "/")
	switch {
	case rest == "":
		h.overview(rq)
	case rest == "submissions":
		h.list(rq)
	case rest == "suppressions":
		h.suppressions(rq)
	case rest == "destinations":
		h.destinations(rq) // destinations.go
	case len(parts) == 2 && parts[0] == "submissions":
		h.detail(rq, parts[1])
	case len(parts) == 3 && parts[0] == "submissions" && parts[2] == "erase":
		h.confirmErase(rq, parts[1])
	case len(parts) == 2 && parts[0] == "files":
		h.downloadFile(rq, parts[1]) // files.go
	default:
		rq.fail(http.StatusNotFound, "There is no such page in the inbox.")
	}
}

func (h *Handler) servePost(rq *request, rest string) {
	parts := strings.Split(rest, "/")
	switch {
	case rest == "retry-dead":
		h.bulkRetry(rq)
	case rest == "export":
		h.export(rq)
	case rest == "suppressions/remove":
		h.removeSuppression(rq)
	case rest == "destinations/park" || rest == "destinations/unpark":
		h.destinationAction(rq, strings.TrimPrefix(rest, "destinations/"))
	case len(parts) == 3 && parts[0] == "deliveries" && parts[2] == "retry":
		h.retry(rq, parts[1])
	case len(parts) == 3 && parts[0] == "submissions":
		h.submissionAction(rq, parts[1], parts[2])
	default:
		rq.fail(http.StatusNotFound, "There is no such action in the inbox.")
	}
}

// shows reports whether this inbox shows form.
func (h *Handler) shows(form string) bool {
	return len(h.cfg.Forms) == 0 || slices.Contains(h.cfg.Forms, form)
}

// submission loads a submission this inbox shows; a malformed id, an unknown one and one
// of a form it does not show all answer 404, so the inbox never confirms what it hides.
func (rq *request) submission(ctx context.Context, raw string) (*outbox.Submission, bool) {
	id, err := uuid.Parse(raw)
	if err != nil {
		rq.fail(http.StatusNotFound, "There is no such submission.")
		return nil, false
	}
	sub, err := rq.h.cfg.Store.GetSubmission(ctx, id)
	if errors.Is(err, outbox.ErrNotFound) || (err == nil && !rq.h.shows(sub.Form)) {
		rq.fail(http.StatusNotFound, "There is no such submission (it may have been erased).")
		return nil, false
	}
	if err != nil {
		rq.storeFailed(err)
		return nil, false
	}
	return sub, true
}

// storeFailed answers 503: the database did not answer. The error text stays out of the
// page (it may quote SQL or a DSN host) and out of visitor-facing logs.
func (rq *request) storeFailed(err error) {
	rq.h.cfg.Logger.Error("inbox: store failed", zap.String("path", rq.r.URL.Path), zap.Error(err))
	rq.fail(http.StatusServiceUnavailable, "The database did not answer; nothing was changed. Try again in a moment.")
}
