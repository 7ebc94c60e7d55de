package inbox

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// ExportColumns are the CSV columns of every export (the inbox's and the admin API's,
// internal/adminapi/export.go). Forms differ in their fields and a stream cannot know every field
// name before the last row, so the fields travel as one JSON object (in the visitor's
// order) in the data column. The client IP stays out (it may be the address itself, see
// intake/meta.go, and a spreadsheet travels further than the database); the NDJSON export
// carries it.
// The files column holds the metadata of the submission's files (FilesJSON), never their
// content.
var ExportColumns = []string{"id", "created_at", "form", "status", "reason", "test", "origin", "referer", "user_agent", "data", "files"}

// CSVExport writes ExportColumns to bw, then returns a func writing one row per
// submission (its Files as the caller loaded them) and one flushing everything written
// so far (the CSV writer, then bw).
func CSVExport(bw *bufio.Writer) (write func(*outbox.Submission) error, flush func() error) {
	cw := csv.NewWriter(bw)
	_ = cw.Write(ExportColumns) // a failed write surfaces in cw.Error at the first row
	write = func(s *outbox.Submission) error {
		// Every cell, not only the visitor's: a spreadsheet runs a formula wherever it
		// finds one, and a column that cannot start with one today is cheap to guard.
		_ = cw.Write(safetext.CSVRecord([]string{s.ID.String(), s.CreatedAt.Format(time.RFC3339Nano), s.Form,
			string(s.Status), s.Reason, strconv.FormatBool(s.Test), s.Meta.Origin, s.Meta.Referer,
			s.Meta.UserAgent, string(s.Data.AppendJSON(nil)), FilesJSON(s.Files)}))
		return cw.Error()
	}
	flush = func() error {
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
		return bw.Flush()
	}
	return write, flush
}

// exportRow is one NDJSON line.
type exportRow struct {
	ID        string          `json:"id"`
	Form      string          `json:"form"`
	Status    string          `json:"status"`
	Reason    string          `json:"reason,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	Test      bool            `json:"test,omitempty"`
	Data      outbox.Fields   `json:"data"`
	Meta      outbox.Meta     `json:"meta"`
	Files     json.RawMessage `json:"files"`
}

// export streams the posted filter's submissions, newest first, a page at a time.
func (h *Handler) export(rq *request) {
	f := readFilter(rq.r.PostForm)
	f.Cursor = ""
	sf, err := h.storeFilter(f)
	if err != nil {
		rq.fail(http.StatusBadRequest, err.Error()+".")
		return
	}
	format := rq.r.PostFormValue("format")
	if format != "csv" && format != "ndjson" {
		rq.fail(http.StatusBadRequest, "Choose CSV or NDJSON to export.")
		return
	}
	w := rq.w
	bw := bufio.NewWriterSize(w, 64<<10)
	var write func(*outbox.Submission) error
	flush := bw.Flush
	stamp := h.cfg.Now().UTC().Format("20060102-150405")
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="submissions-`+stamp+`.csv"`)
		write, flush = CSVExport(bw)
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="submissions-`+stamp+`.ndjson"`)
		enc := json.NewEncoder(bw)
		write = func(s *outbox.Submission) error {
			data := s.Data
			if data == nil {
				data = outbox.Fields{}
			}
			return enc.Encode(exportRow{ID: s.ID.String(), Form: s.Form, Status: string(s.Status), Reason: s.Reason,
				CreatedAt: s.CreatedAt, Test: s.Test, Data: data, Meta: s.Meta, Files: json.RawMessage(FilesJSON(s.Files))})
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	n := 0
	err = exportPages(rq, sf, func(s *outbox.Submission) error {
		n++
		return write(s)
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		// Once rows went out the status is sent: the file ends short and the log says why.
		h.cfg.Logger.Error("inbox: export", zap.Int("rows_written", n), zap.Error(err))
		if n == 0 {
			rq.storeFailed(err)
		}
		return
	}
	h.cfg.Logger.Info("inbox export", zap.String("user", rq.user), zap.Int("rows", n), zap.String("format", format))
}

// exportPages calls fn for every submission sf selects, reading one page at a time so
// memory stays bounded however many rows match.
func exportPages(rq *request, sf outbox.InboxFilter, fn func(*outbox.Submission) error) error {
	sf.Limit = 200
	for {
		page, next, err := rq.h.cfg.Store.SearchSubmissions(rq.r.Context(), sf)
		if err != nil {
			return err
		}
		for i := range page {
			files, err := rq.h.cfg.Store.SubmissionFiles(rq.r.Context(), page[i].ID)
			if err != nil {
				return err
			}
			page[i].Files = files
			if err := fn(&page[i]); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		sf.Cursor = next
	}
}
