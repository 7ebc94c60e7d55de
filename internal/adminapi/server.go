package adminapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// Backend is what the admin routes need from the running form_outbox App. The root
// package's App implements it (admin.go there), so this package never imports Caddy and
// its routes test against a plain store.
type Backend interface {
	// Store is the outbox store the App delivers from.
	Store() outbox.Store
	// Logger records admin actions, with ids only: Caddy ships these logs.
	Logger() *zap.Logger
	// Wake tells the workers (this instance's and, on PostgreSQL, the others') that a
	// retry or a release made deliveries due.
	Wake(ctx context.Context)
	// Health is the App's health, as CheckHealth judges it.
	Health(ctx context.Context) Health
	// ReplaySpool runs one spool replay pass now; ErrSpoolOff when the spool is off.
	ReplaySpool(ctx context.Context) (spool.Report, error)
	// Parker parks and unparks destinations by hand: the App's worker, which updates
	// its copy of the parked set at once (outbox/parking.go).
	Parker() outbox.Parker
	// Ledger is the lead ledger of the last days UTC days (ledger.go), limited to forms
	// when not empty, with this instance's counts flushed first.
	Ledger(ctx context.Context, forms []string, days int) (outbox.Ledger, error)
}

// ErrSpoolOff is what Backend.ReplaySpool returns when the App runs without a spool.
var ErrSpoolOff = errors.New("the spool is off")

// RouteError is an answer the admin server owes with Status and a JSON body
// {"error": "..."}; the root package hands it to Caddy as a caddy.APIError, which writes
// it. Messages name ids and statuses only: Caddy logs them.
type RouteError struct {
	Status int
	Err    error
}

func (e *RouteError) Error() string { return e.Err.Error() }
func (e *RouteError) Unwrap() error { return e.Err }

func apiError(status int, err error) error { return &RouteError{Status: status, Err: err} }

// storeError maps the store's sentinel errors to HTTP statuses.
func storeError(err error) error {
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return apiError(http.StatusNotFound, err)
	case errors.Is(err, outbox.ErrNotRetryable), errors.Is(err, outbox.ErrNotReleasable):
		return apiError(http.StatusConflict, err)
	case errors.Is(err, outbox.ErrBadCursor):
		return apiError(http.StatusBadRequest, err)
	}
	return apiError(http.StatusInternalServerError, err)
}

// routeFunc serves one route for the running App; id is the route's {id} (uuid.Nil when
// it has none). An error becomes the answer unless the route already wrote one.
type routeFunc func(b Backend, w http.ResponseWriter, r *http.Request, id uuid.UUID) error

// Server is the admin API: one http.ServeMux of method+path patterns under Prefix. The
// mux answers wrong methods (405 with Allow) and unknown paths; ServeAdmin turns both into
// the JSON errors Caddy's admin endpoint gives everywhere else.
type Server struct {
	mux     *http.ServeMux
	running func() Backend
}

// NewServer builds the routes. running returns the App of the running config, or nil
// between configs: Caddy provisions admin modules before apps and starts a reload's new
// App before it stops the old one, so the App is looked up per request.
func NewServer(running func() Backend) *Server {
	s := &Server{mux: http.NewServeMux(), running: running}
	s.handle("GET health", serveHealth)
	s.handle("GET submissions", serveListSubmissions)
	s.handle("GET submissions/{id}", serveShowSubmission)
	s.handle("DELETE submissions/{id}", serveDeleteSubmission)
	s.handle("POST submissions/{id}/release", serveReleaseSubmission)
	s.handle("GET deliveries", serveListDeliveries)
	s.handle("GET deliveries/{id}", serveShowDelivery)
	s.handle("POST deliveries/{id}/retry", serveRetryDelivery)
	s.handle("GET export", serveExport)
	s.handle("GET suppressions", serveListSuppressions)
	s.handle("POST suppressions", serveAddSuppression)
	s.handle("DELETE suppressions", serveRemoveSuppression)
	s.handle("POST spool/replay", serveSpoolReplay)
	s.handle("GET destinations", serveListDestinations)
	s.handle("POST destinations/park", serveParkDestination)
	s.handle("POST destinations/unpark", serveUnparkDestination)
	s.handle("GET alerts", serveListAlerts)
	s.handle("GET ledger", serveLedger)
	s.handle("POST backup/restore", serveBackupRestore) // backup.go
	return s
}

// errSlot carries a route's error from inside the mux back to ServeAdmin, which returns
// it to Caddy.
type errSlot struct{ err error }

type errSlotKey struct{}

// handle registers route at "METHOD path", path relative to Prefix.
func (s *Server) handle(pattern string, route routeFunc) {
	method, rel, _ := strings.Cut(pattern, " ")
	hasID := strings.Contains(rel, "{id}")
	s.mux.HandleFunc(method+" "+Prefix+rel, func(w http.ResponseWriter, r *http.Request) {
		slot := r.Context().Value(errSlotKey{}).(*errSlot)
		var id uuid.UUID
		if hasID {
			var err error
			if id, err = uuid.Parse(r.PathValue("id")); err != nil {
				slot.err = apiError(http.StatusBadRequest, fmt.Errorf("malformed id %q: want a UUID", r.PathValue("id")))
				return
			}
		}
		b := s.running()
		if b == nil {
			slot.err = apiError(http.StatusServiceUnavailable, errors.New("the form_outbox app is not running"))
			return
		}
		slot.err = route(b, w, r, id)
	})
}

// ServeAdmin answers one request under Prefix, in the shape of caddy.AdminHandlerFunc. A
// trailing slash is ignored, as clients have always been allowed to send one.
func (s *Server) ServeAdmin(w http.ResponseWriter, r *http.Request) error {
	rel := strings.Trim(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	if rel == "" || path.Clean("/"+rel) != "/"+rel {
		// The mux would redirect an unclean path; no route has one.
		return notFound(rel)
	}
	r2 := r.Clone(context.WithValue(r.Context(), errSlotKey{}, new(errSlot)))
	r2.URL.Path, r2.URL.RawPath = Prefix+rel, ""
	if h, pattern := s.mux.Handler(r2); pattern == "" {
		// No route: the mux's own answer tells 405 (with Allow) from 404; its plain-text
		// body is replaced by a JSON error.
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r2)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			return apiError(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed on %s%s", r.Method, Prefix, rel))
		}
		return notFound(rel)
	}
	s.mux.ServeHTTP(w, r2)
	return r2.Context().Value(errSlotKey{}).(*errSlot).err
}

func notFound(rel string) error {
	return apiError(http.StatusNotFound, fmt.Errorf("no such form_outbox admin route: %s%s", Prefix, rel))
}

// statusProbe records the status and headers of the mux's not-found and
// method-not-allowed answers and drops their bodies.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }
func (p *statusProbe) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}

func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}
