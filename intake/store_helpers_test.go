package intake

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// realStore is a SQLite store on a temp file plus a read-only view of its tables, so a
// test can check every row, not only what the Store interface returns.
type realStore struct {
	outbox.Store
	db  *sql.DB
	acc *outbox.Acceptor
}

func openRealStore(t *testing.T) *realStore {
	t.Helper()
	path := filepath.Join(t.TempDir(), "outbox.db")
	s := storetest.OpenSQLiteAt(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &realStore{Store: s, db: db, acc: &outbox.Acceptor{Store: s}}
}

// serve runs one POST through intake's entry point, with the store behind the Acceptor
// the Caddy App gives its handlers.
func (s *realStore) serve(t *testing.T, c *Config, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	return s.serveAt(t, c, r, testNow)
}

// serveAt is serve with the clock at now.
func (s *realStore) serveAt(t *testing.T, c *Config, r *http.Request, now time.Time) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	c.serveSubmission(w, r, s.acc, zaptest.NewLogger(t), now)
	return w
}

// row is one stored submission as the table holds it, with its deliveries and events.
type row struct {
	ID, Form, Status, Reason, Data, Meta string
	Test                                 bool
	Deliveries                           []string // "route recipient status attempts"
	Events                               []string // kinds
}

// rows returns every submission, keyed by id.
func (s *realStore) rows(t *testing.T) map[string]row {
	t.Helper()
	out := map[string]row{}
	q := func(query string, args []any, scan func(*sql.Rows) error) {
		rs, err := s.db.Query(query, args...)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rs.Close()
		for rs.Next() {
			if err := scan(rs); err != nil {
				t.Fatal(err)
			}
		}
	}
	q(`SELECT id, form, status, reason, data, meta, test FROM submissions`, nil, func(rs *sql.Rows) error {
		var r row
		err := rs.Scan(&r.ID, &r.Form, &r.Status, &r.Reason, &r.Data, &r.Meta, &r.Test)
		out[r.ID] = r
		return err
	})
	q(`SELECT submission_id, route, recipient, status, attempts FROM deliveries ORDER BY route, recipient`, nil, func(rs *sql.Rows) error {
		var id, route, rcpt, status string
		var attempts int
		err := rs.Scan(&id, &route, &rcpt, &status, &attempts)
		r := out[id]
		r.Deliveries = append(r.Deliveries, fmt.Sprintf("%s %s %s %d", route, rcpt, status, attempts))
		out[id] = r
		return err
	})
	q(`SELECT submission_id, kind FROM events ORDER BY id`, nil, func(rs *sql.Rows) error {
		var id, kind string
		err := rs.Scan(&id, &kind)
		r := out[id]
		r.Events = append(r.Events, kind)
		out[id] = r
		return err
	})
	return out
}

// newRows returns the rows of after that are not in before, and fails t if any row of
// before changed or disappeared.
func newRows(t *testing.T, before, after map[string]row) []row {
	t.Helper()
	for id, b := range before {
		if a, ok := after[id]; !ok || !reflect.DeepEqual(a, b) {
			t.Errorf("row %s changed:\nbefore %+v\nafter  %+v", id, b, a)
		}
	}
	var out []row
	for id, a := range after {
		if _, ok := before[id]; !ok {
			out = append(out, a)
		}
	}
	return out
}
