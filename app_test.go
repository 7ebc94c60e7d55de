package formoutbox

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
)

func testContext(t *testing.T) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

// A Provision that fails must not give back a store reference it never took: if it did,
// the shared store of the running config would be closed under it.
func TestFailedProvisionCleanupKeepsSharedStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "forms.db")

	running := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: path}}}
	if err := running.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	defer running.Cleanup()

	broken := &App{App: caddyconf.App{
		Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: path},
		Email:   &caddyconf.EmailConfig{From: "not an address"},
	}}
	if err := broken.Provision(testContext(t)); err == nil {
		t.Fatal("provision with a bad from address succeeded")
	}
	if err := broken.Cleanup(); err != nil {
		t.Fatalf("cleanup after failed provision: %v", err)
	}
	if err := running.store.Ping(context.Background()); err != nil {
		t.Fatalf("the running App's store was closed by the failed App's cleanup: %v", err)
	}
}

// Two Apps on one database share one store; it is closed when the last one is cleaned up.
func TestAppsShareStoreUntilLastCleanup(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "forms.db")
	a := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: path}}}
	b := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: path}}}
	for _, app := range []*App{a, b} {
		if err := app.Provision(testContext(t)); err != nil {
			t.Fatalf("provision: %v", err)
		}
	}
	if a.store != b.store {
		t.Fatal("two Apps on one SQLite file opened two stores")
	}
	if err := a.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Ping(context.Background()); err != nil {
		t.Fatalf("store closed while an App still uses it: %v", err)
	}
	if err := b.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Ping(context.Background()); err == nil {
		t.Fatal("store still open after the last App was cleaned up")
	}
}

// A JSON config with a real email provider and no sender is refused at Provision rather
// than sending from form-outbox@localhost, which providers reject or file as spam. The
// file provider keeps its development default.
func TestEmailFromIsRequiredWithARealProvider(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	for name, ec := range map[string]*caddyconf.EmailConfig{
		"ses":    {SES: &caddyconf.SESConfig{Region: "eu-west-1"}},
		"resend": {Resend: &caddyconf.ResendConfig{APIKey: "re_x"}},
		"smtp":   {SMTP: &caddyconf.SMTPConfig{Address: "127.0.0.1:2525", TLS: "none"}},
	} {
		a := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: filepath.Join(t.TempDir(), "forms.db")}, Email: ec}}
		err := a.Provision(testContext(t))
		a.Cleanup()
		if err == nil || !strings.Contains(err.Error(), "email: from is required") {
			t.Errorf("%s without from: provision error %v, want the from requirement", name, err)
		}
	}
	a := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: filepath.Join(t.TempDir(), "forms.db")}, Email: &caddyconf.EmailConfig{File: &caddyconf.FileConfig{Dir: t.TempDir()}}}}
	if err := a.Provision(testContext(t)); err != nil {
		t.Fatalf("file provider without from: %v", err)
	}
	defer a.Cleanup()
	if a.from != DefaultFrom {
		t.Errorf("file provider sender %q, want %q", a.from, DefaultFrom)
	}
}

// A JSON config's inbox_url gets the check the Caddyfile's gets (intake.CheckInboxURL):
// a relative or query-carrying URL would put dead links in every notification email.
func TestInboxURLIsCheckedAtProvision(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	for _, bad := range []string{"/inbox", "https://example.com/inbox?x=1"} {
		a := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: filepath.Join(t.TempDir(), "forms.db")}, InboxURL: bad}}
		err := a.Provision(testContext(t))
		a.Cleanup()
		if err == nil || !strings.Contains(err.Error(), "form_outbox: inbox_url ") || !strings.Contains(err.Error(), "want an absolute http(s) URL without query") {
			t.Errorf("inbox_url %q: provision error %v, want the inbox_url check", bad, err)
		}
	}
	a := &App{App: caddyconf.App{Storage: &caddyconf.StorageConfig{Driver: caddyconf.DriverSQLite, Path: filepath.Join(t.TempDir(), "forms.db")}, InboxURL: "https://example.com/inbox"}}
	if err := a.Provision(testContext(t)); err != nil {
		t.Fatalf("inbox_url https://example.com/inbox: %v", err)
	}
	a.Cleanup()
}
