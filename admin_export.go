package formoutbox

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// exportColumns are the CSV columns. Forms differ in their fields and a stream cannot
// know every field name before the last row, so the fields travel as one JSON object
// (in the visitor's order) in the data column. The client IP stays out (it may be the
// address itself, see intake/meta.go, and a spreadsheet travels further than the
// database); the NDJSON export carries it.
var exportColumns = []string{"id", "created_at", "form", "status", "reason", "test", "origin", "referer", "user_agent", "data"}

// serveExport streams matching submissions as NDJSON (default) or CSV, newest first. The
// store is read a page at a time and the writer flushes as it goes, so neither Caddy nor
// the database holds the whole table.
func serveExport(a *App, w http.ResponseWriter, r *http.Request, _ uuid.UUID) error {
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
	o, err := a.ops()
	if err != nil {
		return err
	}

	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		write func(*outbox.Submission) error
		flush = bw.Flush
	)
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="form_outbox.csv"`)
		cw := csv.NewWriter(bw)
		if err := cw.Write(exportColumns); err != nil {
			return err
		}
		write = func(s *outbox.Submission) error {
			data, err := json.Marshal(s.Data)
			if err != nil {
				return err
			}
			// Every cell, not only the visitor's: a spreadsheet runs a formula wherever it
			// finds one, and a column that cannot start with one today is cheap to guard.
			cw.Write(safetext.CSVRecord([]string{s.ID.String(), s.CreatedAt.Format(time.RFC3339Nano), s.Form,
				string(s.Status), s.Reason, strconv.FormatBool(s.Test), s.Meta.Origin, s.Meta.Referer,
				s.Meta.UserAgent, string(data)}))
			return cw.Error()
		}
		flush = func() error {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			return bw.Flush()
		}
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="form_outbox.ndjson"`)
		enc := json.NewEncoder(bw)
		write = func(s *outbox.Submission) error { return enc.Encode(newSubmissionView(s)) }
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
		a.logger.Error("export submissions", zap.Int("rows_written", n), zap.Error(err))
		if n == 0 {
			return storeError(err)
		}
		return nil
	}
	a.logger.Info("submissions exported", zap.Int("rows", n), zap.String("format", format))
	return flush()
}
