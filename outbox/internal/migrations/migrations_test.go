package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersByVersion(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0010_later.sql": {Data: []byte("B")},
		"m/0002_next.sql":  {Data: []byte("A")},
		"m/README.txt":     {Data: []byte("ignored")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 2 || ms[0].SQL != "A" || ms[1].Version != 10 || ms[1].Name != "0010_later.sql" {
		t.Fatalf("got %+v", ms)
	}
}

func TestLoadRejectsBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number":      {"m/init.sql": {}},
		"zero":           {"m/0000_init.sql": {}},
		"shared version": {"m/0001_a.sql": {}, "m/01_b.sql": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil || !strings.Contains(err.Error(), "migration") {
			t.Errorf("%s: err = %v, want a migration error", name, err)
		}
	}
}
