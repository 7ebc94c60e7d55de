package sqlq

import (
	"strings"
	"testing"
	"testing/fstest"
)

func file(text string) fstest.MapFS {
	return fstest.MapFS{"queries/a.sql": {Data: []byte(text)}}
}

func TestLoadReadsNamedQueriesAndExpandsIncludes(t *testing.T) {
	fsys := fstest.MapFS{
		"queries/columns.sql": {Data: []byte("-- name: Cols\n-- the submission columns\nid, form\n")},
		"queries/read.sql": {Data: []byte("-- name: Get\n-- Get reads one row.\nSELECT {{Cols}}\n\tFROM t -- by id\n\tWHERE id = ?;\n\n" +
			"-- name: Count\nSELECT count(*) FROM t\n")},
	}
	s, err := Load(fsys, "queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Must("Get"), "SELECT id, form\n\tFROM t -- by id\n\tWHERE id = ?"; got != want {
		t.Errorf("Get = %q, want %q", got, want)
	}
	if got := s.Unused(); len(got) != 1 || got[0] != "Count" {
		t.Errorf("unused = %v, want [Count] (Cols is used by Get's include)", got)
	}
	s.Must("Count")
	if got := s.Unused(); len(got) != 0 {
		t.Errorf("unused = %v after every query was asked for", got)
	}
}

func TestMustPanicsOnAMissingName(t *testing.T) {
	s, err := Load(file("-- name: Get\nSELECT 1\n"), "queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, "no query named Gett") {
			t.Errorf("recovered %v, want a panic naming Gett", r)
		}
	}()
	s.Must("Gett")
}

func TestLoadRefusesMalformedFiles(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"duplicate", "-- name: A\nSELECT 1\n-- name: A\nSELECT 2\n", "already defined"},
		{"before the first name", "SELECT 1\n-- name: A\nSELECT 2\n", "before the first"},
		{"empty", "-- name: A\n-- only a comment\n-- name: B\nSELECT 2\n", "A is empty"},
		{"unknown include", "-- name: A\nSELECT {{Nope}}\n", "unknown Nope"},
		{"nested include", "-- name: A\nx\n-- name: B\n{{A}}\n-- name: C\n{{B}}\n", "includes again"},
	} {
		_, err := Load(file(tc.text), "queries/*.sql")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := Load(file("-- name: A\nSELECT 1\n"), "none/*.sql"); err == nil {
		t.Error("a pattern matching no file loaded")
	}
}

func TestMustLoadPanicsOnABadFile(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustLoad of a file with a duplicate name did not panic")
		}
	}()
	MustLoad(file("-- name: A\nx\n-- name: A\ny\n"), "queries/*.sql")
}

func TestMustFillSetsEachFieldToItsQuery(t *testing.T) {
	s, err := Load(file("-- name: Get\nSELECT 1\n\n-- name: Put\nINSERT INTO t VALUES (1)\n\n-- name: Other\nSELECT 2\n"), "queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var q struct{ Get, Put string }
	s.MustFill(&q)
	if q.Get != "SELECT 1" || q.Put != "INSERT INTO t VALUES (1)" {
		t.Errorf("filled %+v", q)
	}
	if got := s.Unused(); len(got) != 1 || got[0] != "Other" {
		t.Errorf("unused = %v, want [Other]: the filled queries count as used", got)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Missing") {
			t.Errorf("MustFill with a field no query is named like: recovered %v, want a panic naming Missing", r)
		}
	}()
	var missing struct{ Get, Missing string }
	s.MustFill(&missing)
}

func TestMustMapHoldsTheNamedQueries(t *testing.T) {
	s, err := Load(file("-- name: A\nSELECT 1\n\n-- name: B\nSELECT 2\n\n-- name: C\nSELECT 3\n"), "queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	m := s.MustMap([]string{"A", "C"})
	if len(m) != 2 || m["A"] != "SELECT 1" || m["C"] != "SELECT 3" {
		t.Errorf("MustMap = %v", m)
	}
	if got := s.Unused(); len(got) != 1 || got[0] != "B" {
		t.Errorf("unused = %v, want [B]", got)
	}
}
