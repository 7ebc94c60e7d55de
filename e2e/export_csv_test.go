package e2e

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A CSV export opened in a spreadsheet must not run what a visitor typed or sent as a
// header: every cell that starts like a formula gets a leading quote, in the origin,
// referer and user agent columns as in the fields; the NDJSON export keeps the values
// exact; the CLI's CSV is the API's.
func TestAdminCSVExportNeutralisesFormulaCells(t *testing.T) {
	t.Parallel()
	hook := newSwitchable(t, http.StatusOK)
	p := newCaddy(t, caddyOpts{Caddyfile: adminConfig("sqlite {{DIR}}/forms.db", hook.srv.URL)})
	const (
		origin    = "@SUM(1+1)"
		referer   = `=HYPERLINK("http://evil.example/","open")`
		userAgent = "-2+3 cmd|' /C calc'!A0"
		name      = "=1+2"
		message   = "+cmd|' /C calc'!A0"
	)
	id := postWithHeaders(t, p, "/contact", url.Values{"name": {name}, "message": {message}},
		map[string]string{"Origin": origin, "Referer": referer, "User-Agent": userAgent})

	code, body := p.admin(t, http.MethodGet, "/form_outbox/export?format=csv&form=contact")
	if code != 200 {
		t.Fatalf("csv export = %d %s", code, body)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv export: %d rows (err %v)\n%s", len(rows), err, body)
	}
	if got := strings.Join(rows[0], ","); got != "id,created_at,form,status,reason,test,origin,referer,user_agent,data,files" {
		t.Fatalf("csv header %q", got)
	}
	cell := map[string]string{}
	for i, c := range rows[0] {
		cell[c] = rows[1][i]
	}
	for col, want := range map[string]string{
		"id": id, "form": "contact", "origin": "'" + origin, "referer": "'" + referer, "user_agent": "'" + userAgent,
	} {
		if cell[col] != want {
			t.Errorf("csv %s = %q, want %q", col, cell[col], want)
		}
	}
	// The data cell is a JSON object, which no spreadsheet runs; the values inside it
	// stay as the visitor sent them.
	// url.Values encodes its keys sorted, so message comes first.
	if want := fmt.Sprintf(`{"message":%q,"name":%q}`, message, name); cell["data"] != want {
		t.Errorf("csv data = %q, want %q", cell["data"], want)
	}

	code, body = p.admin(t, http.MethodGet, "/form_outbox/export?form=contact")
	var line struct {
		Data map[string]string
		Meta struct {
			Origin, Referer string
			UserAgent       string `json:"user_agent"`
		}
	}
	if err := json.Unmarshal([]byte(body), &line); code != 200 || err != nil {
		t.Fatalf("ndjson export = %d %s (err %v)", code, body, err)
	}
	if line.Meta.Origin != origin || line.Meta.Referer != referer || line.Meta.UserAgent != userAgent ||
		len(line.Data) != 2 || line.Data["name"] != name || line.Data["message"] != message {
		t.Errorf("ndjson export is not exact: %+v", line)
	}

	_, csvBody := p.admin(t, http.MethodGet, "/form_outbox/export?format=csv&form=contact")
	if out := p.cli(t, true, "export", "--format", "csv", "--form", "contact"); out != csvBody {
		t.Errorf("cli csv export\n%s\nwant the API's\n%s", out, csvBody)
	}
}
