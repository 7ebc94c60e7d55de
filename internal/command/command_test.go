package command

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
)

// fakeAdmin answers admin requests from a table of "METHOD /path" to status and body
// (404 for the rest) and records each request line with its query.
type fakeAdmin struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answers map[string]answer
	got     []string
}

type answer struct {
	status int
	body   string
}

func newFakeAdmin(t *testing.T, answers map[string]answer) *fakeAdmin {
	f := &fakeAdmin{answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		a, ok := f.answers[r.Method+" "+r.URL.Path]
		if !ok {
			a = answer{http.StatusNotFound, `{"error":"not found"}`}
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAdmin) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// form runs `caddy form-outbox ARGS` on the command tree Caddy would get, against the
// admin endpoint at addr (none when empty), and returns what it printed.
func form(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "form-outbox", SilenceUsage: true, SilenceErrors: true}
	Build(root)
	if addr != "" {
		args = append(args, "--address", addr)
	}
	root.SetArgs(args)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

func (f *fakeAdmin) addr() string { return f.srv.Listener.Addr().String() }

// A verb refuses the flags of other verbs by name; export takes --format and sends it.
func TestVerbsTakeOnlyTheirOwnFlags(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/export": {200, "id,form\r\n1,contact\r\n"},
	})
	for _, args := range [][]string{
		{"list", "--format", "csv"},
		{"export", "--limit", "5"},
		{"export", "--json"},
		{"status", "--form", "contact"},
		{"retry", "--deliveries", "d1"},
		{"show", "--storage", "sqlite", "s1"},
	} {
		_, err := form(t, admin.addr(), args...)
		if err == nil || !strings.Contains(err.Error(), "unknown flag: "+args[1]) {
			t.Errorf("%v: err %v, want unknown flag: %s", args, err, args[1])
		}
	}
	if got := admin.requests(); len(got) != 0 {
		t.Fatalf("refused commands still sent %v", got)
	}

	out, err := form(t, admin.addr(), "export", "--format", "csv", "--form", "contact")
	if err != nil {
		t.Fatalf("export --format csv: %v", err)
	}
	if out != "id,form\r\n1,contact\r\n" {
		t.Errorf("export printed %q, want the answer unchanged", out)
	}
	if got := admin.requests(); !slices.Equal(got, []string{"GET /form_outbox/export?form=contact&format=csv"}) {
		t.Errorf("export sent %v", got)
	}
}

// `list --deliveries` refuses the submission-only filters before asking, and sends the
// delivery ones.
func TestListDeliveriesFilters(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/deliveries": {200, `{"items":[{"id":"d1","submission_id":"s1","route":"r","channel":"email","status":"dead","attempts":3,"max_attempts":3}]}`},
	})
	if _, err := form(t, admin.addr(), "list", "--deliveries", "--form", "contact"); err == nil || !strings.Contains(err.Error(), "no --form") {
		t.Errorf("list --deliveries --form: err %v", err)
	}
	out, err := form(t, admin.addr(), "list", "--deliveries", "--status", "dead", "--limit", "5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "d1") || !strings.Contains(out, "3/3") {
		t.Errorf("list --deliveries printed:\n%s", out)
	}
	if got := admin.requests(); !slices.Equal(got, []string{"GET /form_outbox/deliveries?limit=5&status=dead"}) {
		t.Errorf("sent %v", got)
	}
}

// retry, release, delete and show act on exactly one id, and say so.
func TestIDVerbsNeedExactlyOneID(t *testing.T) {
	admin := newFakeAdmin(t, nil)
	for _, verb := range []string{"retry", "release", "delete", "show"} {
		for _, ids := range [][]string{nil, {"a", "b"}} {
			_, err := form(t, admin.addr(), append([]string{verb}, ids...)...)
			if err == nil || err.Error() != verb+" needs exactly one id" {
				t.Errorf("%s %v: err %v", verb, ids, err)
			}
		}
	}
	if got := admin.requests(); len(got) != 0 {
		t.Errorf("sent %v", got)
	}
}

// Each verb's --help lists its own flags and the shared ones, and no flag that only
// another verb has.
func TestHelpPerVerbListsOnlyItsFlags(t *testing.T) {
	root := &cobra.Command{Use: "form-outbox"}
	Build(root)
	own := map[string][]string{}
	all := map[string]bool{}
	for _, sub := range root.Commands() {
		sub.LocalFlags().VisitAll(func(f *pflag.Flag) {
			own[sub.Name()] = append(own[sub.Name()], "--"+f.Name)
			all["--"+f.Name] = true
		})
	}
	if !slices.Contains(own["export"], "--format") || slices.Contains(own["list"], "--format") {
		t.Fatalf("flags per verb: %v", own)
	}
	for verb, flags := range own {
		out, err := form(t, "", verb, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", verb, err)
		}
		if !strings.Contains(out, "form-outbox "+verb) {
			t.Errorf("%s --help does not show its usage:\n%s", verb, out)
		}
		for _, f := range append(flags, "--address", "--config", "--adapter") {
			if !strings.Contains(out, f+" ") {
				t.Errorf("%s --help does not list %s:\n%s", verb, f, out)
			}
		}
		// The description may name other verbs' flags ('list --deliveries'); the flag
		// listing may not.
		_, listing, _ := strings.Cut(out, "\nFlags:")
		for f := range all {
			if !slices.Contains(flags, f) && strings.Contains(listing, f+" ") {
				t.Errorf("%s --help lists %s, a flag it does not take:\n%s", verb, f, out)
			}
		}
	}
}

// A misspelt verb fails instead of printing the help and succeeding.
func TestUnknownVerbFails(t *testing.T) {
	_, err := form(t, "", "retyr", "d1")
	if err == nil || !strings.Contains(err.Error(), `unknown form-outbox command "retyr"`) {
		t.Errorf("err %v", err)
	}
	if _, err := form(t, ""); err == nil || !strings.Contains(err.Error(), "needs a command") {
		t.Errorf("no verb: err %v", err)
	}
}

// `show ID` falls back to the delivery of that id only when no submission has it (404);
// any other failure is reported as it is.
func TestShowFallsBackToDeliveryOnlyOn404(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/deliveries/d1":  {200, `{"id":"d1","submission_id":"s1","route":"team","channel":"email","recipient":"ops@example.com","status":"sent","attempts":1,"max_attempts":5}`},
		"GET /form_outbox/submissions/s2": {500, `{"error":"database is locked"}`},
	})
	out, err := form(t, admin.addr(), "show", "d1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "team (email) -> ops@example.com") {
		t.Errorf("show of a delivery id printed:\n%s", out)
	}
	_, err = form(t, admin.addr(), "show", "s2")
	var ae *adminapi.Error
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Message != "database is locked" {
		t.Errorf("show on a 500: err %v, want the API's error", err)
	}
	want := []string{"GET /form_outbox/submissions/d1", "GET /form_outbox/deliveries/d1", "GET /form_outbox/submissions/s2"}
	if got := admin.requests(); !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
}

// An unhealthy Caddy's status is printed, then the command fails.
func TestStatusUnhealthyPrintsWhyAndFails(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/health": {503, `{"status":"unhealthy","problems":["storage unreachable"],"storage":{"driver":"postgres","reachable":false,"error":"connection refused"}}`},
	})
	out, err := form(t, admin.addr(), "status")
	if err == nil || err.Error() != "form_outbox is unhealthy" {
		t.Errorf("err %v", err)
	}
	for _, want := range []string{"unhealthy", "storage unreachable", "UNREACHABLE: connection refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not print %q:\n%s", want, out)
		}
	}
}

// A healthy Caddy's status prints each route's last canary verdict, a failure with its
// error, and succeeds: a failed canary tells of a destination, not of this instance.
func TestStatusPrintsCanaryVerdicts(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/health": {200, `{"status":"ok","storage":{"driver":"sqlite","reachable":true},"canary":[` +
			`{"form":"contact","route":"crm","channel":"webhook","passed":false,"error":"dead: webhook: 500 Internal Server Error","at":"2026-12-01T10:00:05Z","period_start":"2026-12-01T10:00:00Z","failing_since":"2026-12-01T04:00:05Z"},` +
			`{"form":"contact","route":"email","channel":"email","passed":true,"at":"2026-12-01T10:00:03Z","period_start":"2026-12-01T10:00:00Z"}]}`},
	})
	out, err := form(t, admin.addr(), "status")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	for _, want := range []string{
		// Times print in the local zone: only the date is certain.
		"contact/crm (webhook) FAILED since 2026-12-01 ",
		": dead: webhook: 500 Internal Server Error at 2026-12-01",
		"contact/email (email) passed at 2026-12-01",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not print %q:\n%s", want, out)
		}
	}
}

// Control characters the API sends back, in a table or in an error, reach the terminal
// escaped.
func TestOutputAndErrorsAreEscaped(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/submissions":             {200, `{"items":[{"id":"s1","form":"contact","status":"spam","reason":"\u001b]0;pwned\u0007"}]}`},
		"POST /form_outbox/submissions/s1/release": {409, `{"error":"cannot release \u001b[2J"}`},
	})
	out, err := form(t, admin.addr(), "list")
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\u001b]0;pwned\u0007`) {
		t.Errorf("list printed %q", out)
	}
	_, err = form(t, admin.addr(), "release", "s1")
	if err == nil || strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), `cannot release \u001b[2J`) {
		t.Errorf("release error %q", err)
	}
	if !isStatus(err, http.StatusConflict) {
		t.Errorf("escaped error %v no longer unwraps to the API's 409", err)
	}
}

// An admin address that names no single endpoint is refused before anything is sent.
func TestInvalidAdminAddress(t *testing.T) {
	_, err := form(t, "127.0.0.1:2019-2021", "status")
	if err == nil || err.Error() != "invalid admin address 127.0.0.1:2019-2021: a port range, want one port" {
		t.Errorf("err %v", err)
	}
}
