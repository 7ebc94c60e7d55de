// Package sqlq loads a store's named SQL queries from embedded .sql files.
//
// A file holds any number of queries, each introduced by a line "-- name: QueryName" and
// running to the next such line. Other lines that are wholly a comment are dropped, so the
// files can explain a query without the text reaching the database on every execution. A
// query may include another entry's text with {{Name}}: the column list of a table is
// written once (a fragment) and spelled into every query that reads or writes it.
//
// A store loads its set once, into package variables (MustLoad, then Must for each query),
// so that a misspelled or missing query panics when the program starts, never in the
// middle of a request; its tests check that no query in the files went unused.
package sqlq

import (
	"bufio"
	"fmt"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Set is a store's queries by name.
type Set struct {
	text map[string]string
	used map[string]bool
}

var (
	nameLine = regexp.MustCompile(`^--\s*name:\s*(\S+)\s*$`)
	include  = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
)

// MustLoad is Load that panics: a store's queries are part of its program.
func MustLoad(fsys fs.FS, pattern string) *Set {
	s, err := Load(fsys, pattern)
	if err != nil {
		panic(err)
	}
	return s
}

// Load reads every file of fsys matching pattern (fs.Glob) and returns their queries,
// includes expanded. A name given twice, a file with SQL before its first name, an empty
// query and an include of an unknown name, or of a name that itself includes, are errors.
func Load(fsys fs.FS, pattern string) (*Set, error) {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("sqlq: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("sqlq: no file matches %q", pattern)
	}
	raw := map[string]string{}
	where := map[string]string{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("sqlq: %w", err)
		}
		if err := parse(f, string(b), raw, where); err != nil {
			return nil, err
		}
	}
	s := &Set{text: make(map[string]string, len(raw)), used: map[string]bool{}}
	for name, q := range raw {
		var bad error
		s.text[name] = include.ReplaceAllStringFunc(q, func(m string) string {
			ref := include.FindStringSubmatch(m)[1]
			t, ok := raw[ref]
			switch {
			case !ok:
				bad = fmt.Errorf("sqlq: %s: query %s includes unknown %s", where[name], name, ref)
			case include.MatchString(t):
				bad = fmt.Errorf("sqlq: %s: query %s includes %s, which includes again", where[name], name, ref)
			}
			s.used[ref] = true
			return t
		})
		if bad != nil {
			return nil, bad
		}
	}
	return s, nil
}

func parse(file, text string, raw, where map[string]string) error {
	var (
		name string
		body []string
	)
	flush := func() error {
		if name == "" {
			return nil
		}
		q := strings.TrimSuffix(strings.TrimSpace(strings.Join(body, "\n")), ";")
		if q == "" {
			return fmt.Errorf("sqlq: %s: query %s is empty", file, name)
		}
		raw[name] = q
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if m := nameLine.FindStringSubmatch(line); m != nil {
			if err := flush(); err != nil {
				return err
			}
			name, body = m[1], nil
			if w, dup := where[name]; dup {
				return fmt.Errorf("sqlq: %s:%d: query %s is already defined in %s", file, n, name, w)
			}
			where[name] = fmt.Sprintf("%s:%d", file, n)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || (trimmed == "" && len(body) == 0) {
			continue
		}
		if name == "" {
			return fmt.Errorf("sqlq: %s:%d: SQL before the first \"-- name:\" line", file, n)
		}
		body = append(body, line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sqlq: %s: %w", file, err)
	}
	return flush()
}

// Must returns the query called name and notes it as used. It panics when there is none:
// call it while the package initializes (a package variable), not per request, so that
// the panic comes at start-up. It is not safe for concurrent use.
func (s *Set) Must(name string) string {
	q, ok := s.text[name]
	if !ok {
		panic(fmt.Sprintf("sqlq: no query named %s", name))
	}
	s.used[name] = true
	return q
}

// MustFill sets every string field of the struct dst points to to the query named like
// the field (Must for each), so a set of queries several stores must all supply is
// named once, by a struct type. It panics as Must does, and when dst is not a pointer to
// a struct of strings.
func (s *Set) MustFill(dst any) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("sqlq: MustFill needs a pointer to a struct, not %T", dst))
	}
	v = v.Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Type.Kind() != reflect.String || !f.IsExported() {
			panic(fmt.Sprintf("sqlq: MustFill: field %s of %s is not an exported string", f.Name, v.Type()))
		}
		v.Field(i).SetString(s.Must(f.Name))
	}
}

// MustMap returns the queries called names by name, each asked for with Must: for a
// store that picks among a known set of queries by name at run time.
func (s *Set) MustMap(names []string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = s.Must(n)
	}
	return m
}

// Unused lists, sorted, the queries neither Must nor an include asked for: dead SQL, or
// a query whose Must call went missing.
func (s *Set) Unused() []string {
	var out []string
	for name := range s.text {
		if !s.used[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
