package formoutbox

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/inbox"
	"github.com/formoutbox/caddy-form-outbox/internal/filelink"
	"github.com/formoutbox/caddy-form-outbox/internal/keyfile"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func init() {
	caddy.RegisterModule(new(FilesHandler))
	httpcaddyfile.RegisterHandlerDirective("form_outbox_files", parseFilesDirective)
	httpcaddyfile.RegisterDirectiveOrder("form_outbox_files", httpcaddyfile.Before, "respond")
}

// DefaultFilesURLTTL is how long a signed file link stays valid when files_url sets no
// time of its own.
const DefaultFilesURLTTL = 7 * 24 * time.Hour

// filesKeyFile keys the signed file links (internal/filelink); like the IP hash key it
// lives in Caddy's data dir, so links survive restarts. Instances serving one
// PostgreSQL database must share it to honour each other's links.
const filesKeyFile = "files_url.key"

func loadFilesKey() ([]byte, error) {
	key, err := keyfile.LoadOrCreate(filepath.Join(caddy.AppDataDir(), AppName, filesKeyFile), 32)
	if err != nil {
		return nil, fmt.Errorf("files_url key: %w", err)
	}
	return key, nil
}

// fileURL signs the link to file id for a message planned at now (nil without
// files_url).
func (a *App) fileURL() func(id uuid.UUID, now time.Time) string {
	if a.FilesURL == "" {
		return nil
	}
	ttl := time.Duration(a.FilesURLTTL)
	if ttl <= 0 {
		ttl = DefaultFilesURLTTL
	}
	return func(id uuid.UUID, now time.Time) string {
		return filelink.URL(a.filesKey, a.FilesURL, id, now.Add(ttl))
	}
}

// FilesHandler is the `form_outbox_files` HTTP handler: it serves the signed, expiring
// file links that webhooks and chat messages carry when the App has files_url
// (docs/caddyfile.md, "File uploads"). The link is the authorisation: a bad or expired
// signature is refused with 403, before the store is asked anything. The file is served
// as the inbox serves it (inbox.ServeFile): an attachment, never rendered.
type FilesHandler struct {
	app    *App
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (*FilesHandler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.form_outbox_files",
		New: func() caddy.Module { return new(FilesHandler) },
	}
}

// Provision finds the App; it must have files_url.
func (h *FilesHandler) Provision(ctx caddy.Context) error {
	appVal, err := ctx.App(AppName)
	if err != nil {
		return fmt.Errorf("form_outbox_files: %w", err)
	}
	h.app = appVal.(*App)
	h.logger = ctx.Logger()
	if h.app.FilesURL == "" {
		return errors.New("form_outbox_files: set files_url in the form_outbox global options to the URL this handler serves")
	}
	return nil
}

// ServeHTTP answers GET or HEAD BASE/ID?exp=...&sig=...: the last path segment is the
// file id.
func (h *FilesHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return caddyhttp.Error(http.StatusMethodNotAllowed, nil)
	}
	id, err := uuid.Parse(path.Base(strings.TrimRight(r.URL.Path, "/")))
	if err != nil {
		return caddyhttp.Error(http.StatusNotFound, errors.New("not a file link"))
	}
	q := r.URL.Query()
	if err := filelink.Check(h.app.filesKey, id, q.Get("exp"), q.Get("sig"), time.Now()); err != nil {
		http.Error(w, "This file link is not valid: "+err.Error()+".", http.StatusForbidden)
		return nil
	}
	f, err := h.app.store.GetFile(r.Context(), id)
	if errors.Is(err, outbox.ErrNotFound) || (err == nil && !f.HasContent) {
		http.Error(w, "There is no such file (it may have been erased).", http.StatusNotFound)
		return nil
	}
	if err != nil {
		h.logger.Error("file link: store failed", zap.String("file", id.String()), zap.Error(err))
		http.Error(w, "The database did not answer. Try again in a moment.", http.StatusServiceUnavailable)
		return nil
	}
	if n, err := inbox.ServeFile(w, r, h.app.store, f); err != nil {
		h.logger.Error("file link: download", zap.String("file", id.String()), zap.Int64("bytes_written", n), zap.Error(err))
	}
	return nil
}

func parseFilesDirective(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	fh := new(FilesHandler)
	return fh, fh.UnmarshalCaddyfile(h.Dispenser)
}

// UnmarshalCaddyfile reads `form_outbox_files [MATCHER]`, which takes no options.
func (h *FilesHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() || d.NextBlock(0) {
		return d.Err("form_outbox_files takes no options (the links' URL and lifetime are the global files_url)")
	}
	return nil
}

var (
	_ caddy.Provisioner           = (*FilesHandler)(nil)
	_ caddyhttp.MiddlewareHandler = (*FilesHandler)(nil)
	_ caddyfile.Unmarshaler       = (*FilesHandler)(nil)
)

// fileStore is the App's store seen as a file store (attachments at send time), nil while
// no store is open.
func (a *App) fileStore() outbox.FileStore {
	if a.store == nil {
		return nil
	}
	return a.store
}
