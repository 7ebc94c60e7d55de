package adminapi

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"24h":                  now.Add(-24 * time.Hour),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"1d12h":                now.Add(-36 * time.Hour),
		"1.5d":                 now.Add(-36 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"2025-03-01":           time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC),
		"2025-03-01T08:30:00Z": time.Date(2025, 3, 1, 8, 30, 0, 0, time.UTC),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// A negative duration would mean the future; "d" needs a number before it.
	for _, in := range []string{"yesterday", "-1h", "d", "1hd", "7", "2025-13-01"} {
		if got, err := parseWhen(in, now); err == nil {
			t.Errorf("parseWhen(%q) = %v, want an error", in, got)
		}
	}
}

func TestSubmissionFilterRefusesWhatWouldWidenAQuery(t *testing.T) {
	now := time.Now()
	for query, msg := range map[string]string{
		"frm=contact":     `unknown parameter "frm" (allowed: [form status since until limit cursor])`,
		"status=lost":     `status "lost": want accepted, spam or quarantined`,
		"since=yesterday": `since: "yesterday" is not an RFC 3339 time, a date (2006-01-02) or a duration ago (24h, 7d)`,
		"limit=0":         `limit "0": want 1..1000`,
		"limit=x":         `limit "x": want 1..1000`,
	} {
		q, _ := url.ParseQuery(query)
		_, err := submissionFilter(q, now)
		re, ok := err.(*RouteError)
		if !ok || re.Status != http.StatusBadRequest || re.Error() != msg {
			t.Errorf("%s: %v, want 400 %q", query, err, msg)
		}
	}
	if _, err := submissionFilter(url.Values{"cursor": {"zzz"}}, now); err == nil || err.(*RouteError).Status != http.StatusBadRequest {
		t.Errorf("bad cursor: %v, want 400", err)
	}
	q, _ := url.ParseQuery("form=contact&status=spam&since=2h&limit=20")
	f, err := submissionFilter(q, now)
	if err != nil || f.Form != "contact" || f.Status != "spam" || !f.Since.Equal(now.Add(-2*time.Hour)) || f.Limit != 20 {
		t.Errorf("good filter = %+v, %v", f, err)
	}
}

func TestDeliveryFilter(t *testing.T) {
	for _, query := range []string{"status=lost", "form=contact", "limit=1001"} {
		q, _ := url.ParseQuery(query)
		if _, err := deliveryFilter(q); err == nil || err.(*RouteError).Status != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", query, err)
		}
	}
	q, _ := url.ParseQuery("status=dead&limit=5")
	if f, err := deliveryFilter(q); err != nil || f.Status != "dead" || f.Limit != 5 {
		t.Errorf("good filter = %+v, %v", f, err)
	}
}
