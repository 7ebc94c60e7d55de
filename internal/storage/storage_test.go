package storage

import (
	"os"
	"strings"
	"testing"
)

// envReplace resolves the one placeholder these tests use, as Caddy's replacer would.
func envReplace(s string) string {
	return strings.ReplaceAll(s, "{env.FORM_OUTBOX_TEST_DSN}", os.Getenv("FORM_OUTBOX_TEST_DSN"))
}

func TestPostgresDSNPlaceholderIsResolvedAndNeverDescribed(t *testing.T) {
	t.Setenv("FORM_OUTBOX_TEST_DSN", "postgres://u:s3cret@db.invalid/forms")
	sc, err := Resolve(Config{Driver: DriverPostgres, DSN: "{env.FORM_OUTBOX_TEST_DSN}", Schema: "forms"}, envReplace, "")
	if err != nil {
		t.Fatal(err)
	}
	if sc.DSN != "postgres://u:s3cret@db.invalid/forms" {
		t.Errorf("resolved DSN %q", sc.DSN)
	}
	if strings.Contains(sc.Describe(), "s3cret") || strings.Contains(sc.Describe(), "db.invalid") {
		t.Errorf("Describe() reveals the DSN: %q", sc.Describe())
	}

	t.Setenv("FORM_OUTBOX_TEST_DSN", "")
	_, err = Resolve(Config{Driver: DriverPostgres, DSN: "{env.FORM_OUTBOX_TEST_DSN}"}, envReplace, "")
	if err == nil || !strings.Contains(err.Error(), "{env.FORM_OUTBOX_TEST_DSN}") {
		t.Errorf("empty DSN: got %v, want an error naming the placeholder", err)
	}
}

// SQLite gets the default file when none is given; options of the other driver are an
// error, never silently ignored.
func TestResolveDefaultsAndRefusesForeignOptions(t *testing.T) {
	def := t.TempDir() + "/outbox.db"
	c, err := Resolve(Config{}, envReplace, def)
	if err != nil || c.Driver != DriverSQLite || c.Path != def {
		t.Errorf("empty config resolved to %+v, %v; want sqlite at %s", c, err, def)
	}
	for name, raw := range map[string]Config{
		"sqlite with a dsn":  {Driver: DriverSQLite, DSN: "postgres://x"},
		"postgres with path": {Driver: DriverPostgres, Path: "x.db", DSN: "postgres://x"},
		"unknown driver":     {Driver: "mysql"},
	} {
		if _, err := Resolve(raw, envReplace, def); err == nil {
			t.Errorf("%s: resolved, want an error", name)
		}
	}
}
