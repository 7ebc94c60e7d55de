package digest

import (
	"strings"
	"testing"
	"time"
)

func mustTime(t *testing.T, v string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "want hourly"},
		{"hourly Europe/Berlin", "hourly takes no arguments"},
		{"daily 08:00", "want daily at HH:MM"},
		{"daily at 8:00", `time "8:00"`},
		{"daily at 24:00", `time "24:00"`},
		{"daily at 08:60", `time "08:60"`},
		{"daily at 08:00 Mars/Olympus", `time zone "Mars/Olympus"`},
		{"daily at 08:00 Local", `time zone "Local"`},
		{"daily at 08:00 UTC extra", "want daily at HH:MM"},
		{"weekly funday 08:00", `weekday "funday"`},
		{"weekly monday", "want weekly WEEKDAY"},
		{"every", "want every DURATION"},
		{"every 500ms", "at least 1s"},
		{"every soon", "every soon"},
		{"monthly", `unknown schedule "monthly"`},
	} {
		_, err := Parse(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// TestPeriods checks Start and Next for each kind, including a daily period across the
// Europe/Berlin daylight saving changes of 2026 (29 March: 02:00 CET -> 03:00 CEST;
// 25 October: 03:00 CEST -> 02:00 CET), which last 23 and 25 hours.
func TestPeriods(t *testing.T) {
	for _, tc := range []struct {
		spec, at, start, end string
	}{
		{"hourly", "2026-12-01T11:40:51Z", "2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"},
		{"hourly", "2026-12-01T11:00:00Z", "2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"},
		{"every 30m", "2026-12-01T11:40:51Z", "2026-12-01T11:30:00Z", "2026-12-01T12:00:00Z"},
		{"every 7m", "1970-01-01T00:15:00Z", "1970-01-01T00:14:00Z", "1970-01-01T00:21:00Z"},
		{"every 2s", "2026-12-01T11:40:51Z", "2026-12-01T11:40:50Z", "2026-12-01T11:40:52Z"},
		{"daily at 08:00", "2026-12-01T07:59:59Z", "2026-11-30T08:00:00Z", "2026-12-01T08:00:00Z"},
		{"daily at 08:00", "2026-12-01T08:00:00Z", "2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z"},
		// Berlin is UTC+1 in winter: 08:00 local is 07:00Z.
		{"daily at 08:00 Europe/Berlin", "2026-12-01T07:30:00Z", "2026-12-01T07:00:00Z", "2026-12-02T07:00:00Z"},
		{"daily at 08:00 Europe/Berlin", "2026-12-01T06:59:00Z", "2026-11-30T07:00:00Z", "2026-12-01T07:00:00Z"},
		// Spring forward: the period from 28 March 08:00 CET to 29 March 08:00 CEST is 23 h.
		{"daily at 08:00 Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-28T07:00:00Z", "2026-03-29T06:00:00Z"},
		{"daily at 08:00 Europe/Berlin", "2026-03-29T06:00:00Z", "2026-03-29T06:00:00Z", "2026-03-30T06:00:00Z"},
		// Fall back: 24 October 08:00 CEST to 25 October 08:00 CET is 25 h.
		{"daily at 08:00 Europe/Berlin", "2026-10-25T06:30:00Z", "2026-10-24T06:00:00Z", "2026-10-25T07:00:00Z"},
		// 02:30 does not exist on 29 March in Berlin: that day's boundary is normalised
		// (to 03:30 CEST) and the periods still follow one another.
		{"daily at 02:30 Europe/Berlin", "2026-03-29T00:45:00Z", "2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z"},
		{"daily at 02:30 Europe/Berlin", "2026-03-29T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"},
		// 1 December 2026 is a Tuesday.
		{"weekly monday 08:00", "2026-12-01T11:00:00Z", "2026-11-30T08:00:00Z", "2026-12-07T08:00:00Z"},
		{"weekly tuesday 12:00", "2026-12-01T11:00:00Z", "2026-11-24T12:00:00Z", "2026-12-01T12:00:00Z"},
		{"weekly Sunday 23:30 Europe/Berlin", "2026-03-30T00:00:00Z", "2026-03-29T21:30:00Z", "2026-04-05T21:30:00Z"},
	} {
		s, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		at := mustTime(t, tc.at)
		start := s.Start(at)
		if want := mustTime(t, tc.start); !start.Equal(want) {
			t.Errorf("%s: Start(%s) = %s, want %s", tc.spec, tc.at, start.Format(time.RFC3339), tc.start)
		}
		if end, want := s.Next(start), mustTime(t, tc.end); !end.Equal(want) {
			t.Errorf("%s: Next(%s) = %s, want %s", tc.spec, start.Format(time.RFC3339), end.Format(time.RFC3339), tc.end)
		}
		// Periods tile time: the end is the start of the period it opens.
		if end := s.Next(start); !s.Start(end).Equal(end) || !s.Start(end.Add(-time.Nanosecond)).Equal(start) {
			t.Errorf("%s: periods around %s do not tile", tc.spec, tc.at)
		}
	}
}

// TestPeriodsTileAcrossAYear walks a year of Berlin days and weeks: every period ends
// where the next begins, and each contains exactly one 08:00 local.
func TestPeriodsTileAcrossAYear(t *testing.T) {
	for _, spec := range []string{"daily at 08:00 Europe/Berlin", "daily at 02:30 Europe/Berlin", "weekly monday 02:30 Europe/Berlin", "hourly", "every 45m"} {
		s, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Start(mustTime(t, "2026-01-01T00:00:00Z"))
		for p.Year() < 2027 {
			n := s.Next(p)
			if !n.After(p) || n.Sub(p) > 8*24*time.Hour {
				t.Fatalf("%s: period %s -> %s", spec, p, n)
			}
			if !s.Start(n).Equal(n) || !s.Start(n.Add(-time.Second)).Equal(p) {
				t.Fatalf("%s: periods %s and %s do not tile", spec, p, n)
			}
			p = n
		}
	}
}

func TestDescribe(t *testing.T) {
	s, _ := Parse("daily at 08:00 Europe/Berlin")
	start := mustTime(t, "2026-12-01T07:00:00Z")
	if got, want := s.Describe(start, s.Next(start)), "2026-12-01 08:00 – 2026-12-02 08:00 Europe/Berlin"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	h, _ := Parse("hourly")
	start = mustTime(t, "2026-12-01T07:00:00Z")
	if got, want := h.Describe(start, h.Next(start)), "2026-12-01 07:00 – 08:00 UTC"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
