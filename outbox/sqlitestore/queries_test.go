package sqlitestore

import "testing"

// Every query in queries/*.sql is used: one left behind by a change is dead SQL, and one
// whose Must call went missing is a query the store no longer runs.
func TestEveryQueryIsUsed(t *testing.T) {
	if u := queries.Unused(); len(u) > 0 {
		t.Errorf("queries in queries/*.sql that the store never asks for: %v", u)
	}
}
