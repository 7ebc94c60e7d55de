package command

import (
	"slices"
	"strings"
	"testing"
)

// ledger prints a table per day, newest first, with a line per route under its form's,
// and fails when a line shows a mismatch; --form and --days reach the API.
func TestLedgerPrintsDaysAndFailsOnAMismatch(t *testing.T) {
	admin := newFakeAdmin(t, map[string]answer{
		"GET /form_outbox/ledger": {200, `{"from":"2026-11-30","until":"2026-12-02","mismatches":1,"days":[
			{"day":"2026-11-30","form":"contact","closed":true,"answered":5,"accepted":3,"spam":1,"quarantined":1,"sent":2,"dead":1,"undelivered":1,
			 "routes":[{"route":"team","sent":2,"dead":1}],"mismatches":["accepted_without_delivery"]},
			{"day":"2026-12-01","form":"contact","answered":2,"accepted":2,"pending":2,"routes":[{"route":"team","pending":2}]},
			{"day":"2026-12-01","form":"jobs","answered":1,"spooled":1,"routes":[]}]}`},
	})
	out, err := form(t, admin.addr(), "ledger", "--form", "contact", "--form", "jobs", "--days", "2")
	if err == nil || !strings.Contains(err.Error(), "1 mismatched lines") {
		t.Errorf("err = %v, want the mismatch to fail the command", err)
	}
	if got := admin.requests(); !slices.Equal(got, []string{"GET /form_outbox/ledger?days=2&form=contact&form=jobs"}) {
		t.Errorf("requests = %v", got)
	}
	want := `2026-12-01 (UTC, open)
FORM     ROUTE  ANSWERED  SPOOLED  REPLAYED  ACCEPTED  SPAM  QUARANTINED  ERASED  SENT  PENDING  PARKED  DEAD  CHECK
contact  *      2         0        0         2         0     0            0       0     2        0       0     ok
contact  team                                                                     0     2        0       0     
jobs     *      1         1        0         0         0     0            0       0     0        0       0     ok

2026-11-30 (UTC, closed)
FORM     ROUTE  ANSWERED  SPOOLED  REPLAYED  ACCEPTED  SPAM  QUARANTINED  ERASED  SENT  PENDING  PARKED  DEAD  CHECK
contact  *      5         0        0         3         1     1            0       2     0        0       1     MISMATCH: 1 accepted submission without a delivery
contact  team                                                                     2     0        0       1     

mismatches: 1
`
	if out != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out, want)
	}
}

// ledger --help describes the verb with its own flags.
func TestLedgerHelp(t *testing.T) {
	out, err := form(t, "", "ledger", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--form", "--days", "--json", "Lead ledger", "exit status 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("ledger --help lacks %q:\n%s", want, out)
		}
	}
	if _, flags, _ := strings.Cut(out, "\nFlags:"); strings.Contains(flags, "--status") || strings.Contains(flags, "--format") {
		t.Errorf("ledger --help lists another verb's flag:\n%s", out)
	}
}
