package inbox

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// downloadCSP is the Content-Security-Policy of a file download: nothing may load or
// run, and a browser that rendered it anyway would give it a unique, script-less origin.
const downloadCSP = "default-src 'none'; sandbox; frame-ancestors 'none'"

// downloadFile serves one stored file (GET or HEAD /files/ID), always as an attachment
// of type application/octet-stream with nosniff and the sandboxing CSP: the content is
// the visitor's, and the inbox's origin must never render it (docs/inbox.md, "Files").
// A file of a form this inbox does not show is answered like an unknown one.
func (h *Handler) downloadFile(rq *request, raw string) {
	ctx, cancel := rq.ctx()
	defer cancel()
	id, err := uuid.Parse(raw)
	if err != nil {
		rq.fail(http.StatusNotFound, "There is no such file.")
		return
	}
	f, err := h.cfg.Store.GetFile(ctx, id)
	if errors.Is(err, outbox.ErrNotFound) {
		rq.fail(http.StatusNotFound, "There is no such file (it may have been erased).")
		return
	}
	if err != nil {
		rq.storeFailed(err)
		return
	}
	if _, ok := rq.submission(ctx, f.SubmissionID.String()); !ok {
		return
	}
	if !f.HasContent {
		rq.fail(http.StatusNotFound, "Only this file's description was kept (it came with spam), not its content.")
		return
	}
	if n, err := ServeFile(rq.w, rq.r, h.cfg.Store, f); err != nil {
		// The status is sent; the download ends short and the log says why.
		h.cfg.Logger.Error("inbox: download", zap.String("file", f.ID.String()), zap.Int64("bytes_written", n), zap.Error(err))
		return
	}
	h.cfg.Logger.Info("inbox download", zap.String("user", rq.user), zap.String("file", f.ID.String()),
		zap.String("submission", f.SubmissionID.String()))
}

// ServeFile answers a download of f (GET, or HEAD for the headers alone) from st: an
// attachment of type application/octet-stream, never the sniffed type, with nosniff
// and a sandboxing CSP, so no browser renders or runs it; the name is the sanitised
// one, encoded as a header parameter (RFC 2231 for non-ASCII). The inbox and the signed
// links of `files_url` (files_handler.go in the repository root) both serve files
// through it. An error after the headers went out leaves the body short.
func ServeFile(w http.ResponseWriter, r *http.Request, st outbox.FileStore, f *outbox.File) (int64, error) {
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	hd.Set("Content-Security-Policy", downloadCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "private, no-store")
	hd.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	if r.Method == http.MethodHead {
		return 0, nil
	}
	return st.CopyFile(r.Context(), f.ID, w)
}

// fileRow is a file as the submission page lists it.
type fileRow struct {
	outbox.File
	Download bool // the content was kept
}

// FilesJSON is the export's files cell: each file's metadata, never its content ("[]"
// for none).
func FilesJSON(files []outbox.File) string {
	out := make([]outbox.FileMeta, 0, len(files))
	for _, f := range files {
		out = append(out, f.Meta())
	}
	b, _ := json.Marshal(out) // strings and numbers only: cannot fail
	return string(b)
}
