package adminapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/inbox"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// serveExport streams matching submissions as NDJSON (default) or CSV, newest first. The
// store is read a page at a time and the writer flushes as it goes, so neither Caddy nor
// the database holds the whole table.
func serveExport(b Backend, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
	q := r.URL.Query()
	f, err := submissionFilter(q, time.Now(), "format")
	if err != nil {
		return err
	}
	if q.Has("limit") || q.Has("cursor") {
		return apiError(http.StatusBadRequest, fmt.Errorf("export takes no limit or cursor: it streams every match"))
	}
	format := q.Get("format")
	if format == "" {
		format = "ndjson"
	}
	if format != "ndjson" && format != "csv" {
		return apiError(http.StatusBadRequest, fmt.Errorf("format %q: want ndjson or csv", format))
	}
	o := b.Store()

	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		write func(*outbox.Submission) error
		flush = bw.Flush
	)
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="form_outbox.csv"`)
		// The same columns as the inbox's export: one owner for the format.
		write, flush = inbox.CSVExport(bw)
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="form_outbox.ndjson"`)
		enc := json.NewEncoder(bw)
		write = func(s *outbox.Submission) error { return enc.Encode(newSubmission(s)) }
	}
	flusher, _ := w.(http.Flusher)
	n := 0
	err = outbox.ExportSubmissions(r.Context(), o, f, func(s *outbox.Submission) error {
		if err := write(s); err != nil {
			return err
		}
		n++
		if n%200 == 0 && flusher != nil {
			if err := flush(); err != nil {
				return err
			}
			flusher.Flush()
		}
		return nil
	})
	if err != nil {
		// Once rows went out the status is sent: the client sees a truncated body (no
		// final newline for NDJSON) and the log says why.
		b.Logger().Error("export submissions", zap.Int("rows_written", n), zap.Error(err))
		if n == 0 {
			return storeError(err)
		}
		return nil
	}
	b.Logger().Info("submissions exported", zap.Int("rows", n), zap.String("format", format))
	return flush()
}
