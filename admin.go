package formoutbox

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// adminPrefix is where the routes live on Caddy's admin endpoint.
const adminPrefix = adminapi.Prefix

// running is the App of the running config. Caddy provisions admin modules before apps
// and starts a reload's new App before it stops the old one, so the admin API looks the
// App up per request: Start installs it, Stop removes it only if it is still the current.
var running atomic.Pointer[App]

func (a *App) setRunning()   { running.Store(a) }
func (a *App) unsetRunning() { running.CompareAndSwap(a, nil) }

// AdminAPI is the `admin.api.form_outbox` module: health and control of the outbox on
// Caddy's admin endpoint, so Caddy's admin access rules (listen address, origins, remote
// admin identities) protect it. Every admin.api module is loaded by Caddy itself; there
// is nothing to configure.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.form_outbox",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Routes serves everything under /form_outbox/ through one dispatcher, so wrong methods
// get 405 with Allow and unknown paths 404, both as Caddy-style JSON errors.
func (AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: adminPrefix, Handler: caddy.AdminHandlerFunc(serveAdmin)}}
}

// adminRoute is one entry of the route table. Pattern segments are literal, or {id} for a
// UUID handed to the handler.
type adminRoute struct {
	method  string
	pattern string
	handle  func(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error
}

// adminRoutes is the route table. Other files add routes with addAdminRoute in their
// init (the spool's replay, for example).
var adminRoutes = []adminRoute{
	{http.MethodGet, "health", serveHealth},
	{http.MethodGet, "submissions", serveListSubmissions},
	{http.MethodGet, "submissions/{id}", serveShowSubmission},
	{http.MethodDelete, "submissions/{id}", serveDeleteSubmission},
	{http.MethodPost, "submissions/{id}/release", serveReleaseSubmission},
	{http.MethodGet, "deliveries", serveListDeliveries},
	{http.MethodGet, "deliveries/{id}", serveShowDelivery},
	{http.MethodPost, "deliveries/{id}/retry", serveRetryDelivery},
	{http.MethodGet, "export", serveExport},
}

// addAdminRoute extends the route table; call it from init.
func addAdminRoute(method, pattern string, handle func(a *App, w http.ResponseWriter, r *http.Request, id uuid.UUID) error) {
	adminRoutes = append(adminRoutes, adminRoute{method, pattern, handle})
}

func serveAdmin(w http.ResponseWriter, r *http.Request) error {
	path := strings.Trim(strings.TrimPrefix(r.URL.Path, adminPrefix), "/")
	var allow []string
	for _, rt := range adminRoutes {
		id, ok, err := matchRoute(rt.pattern, path)
		if !ok {
			continue
		}
		if rt.method != r.Method {
			allow = append(allow, rt.method)
			continue
		}
		if err != nil {
			return err
		}
		a := running.Load()
		if a == nil {
			return apiError(http.StatusServiceUnavailable, errors.New("the form_outbox app is not running"))
		}
		return rt.handle(a, w, r, id)
	}
	if len(allow) > 0 {
		slices.Sort(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return apiError(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed on %s%s", r.Method, adminPrefix, path))
	}
	return apiError(http.StatusNotFound, fmt.Errorf("no such form_outbox admin route: %s%s", adminPrefix, path))
}

// matchRoute matches path against pattern; a malformed {id} matches with a 400 error, so
// the method check still comes first.
func matchRoute(pattern, path string) (uuid.UUID, bool, error) {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return uuid.Nil, false, nil
	}
	var (
		id    uuid.UUID
		badID error
	)
	for i, p := range ps {
		if p == "{id}" {
			u, err := uuid.Parse(xs[i])
			if err != nil {
				badID = apiError(http.StatusBadRequest, fmt.Errorf("malformed id %q: want a UUID", xs[i]))
			}
			id = u
			continue
		}
		if p != xs[i] {
			return uuid.Nil, false, nil
		}
	}
	return id, true, badID
}

// apiError is an error Caddy's admin server answers with the given status and a JSON body
// {"error": "..."}. Messages name ids and statuses only: Caddy logs them.
func apiError(status int, err error) error {
	return caddy.APIError{HTTPStatus: status, Err: err}
}

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

// ops is the App's store seen from the operator's side.
func (a *App) ops() (outbox.Ops, error) {
	o, ok := a.store.(outbox.Ops)
	if !ok {
		return nil, apiError(http.StatusNotImplemented, fmt.Errorf("store %T has no operator interface", a.store))
	}
	return o, nil
}

// Interface guards.
var (
	_ caddy.Module      = AdminAPI{}
	_ caddy.AdminRouter = AdminAPI{}
)
