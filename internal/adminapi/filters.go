package adminapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// submissionFilter reads form, status, since, until, limit and cursor. Unknown
// parameters are refused, so a typo never silently widens a query.
func submissionFilter(q url.Values, now time.Time, extra ...string) (outbox.SubmissionFilter, error) {
	var f outbox.SubmissionFilter
	if err := onlyParams(q, append([]string{"form", "status", "since", "until", "limit", "cursor"}, extra...)...); err != nil {
		return f, err
	}
	f.Form = q.Get("form")
	switch s := outbox.SubmissionStatus(q.Get("status")); s {
	case "", outbox.SubmissionAccepted, outbox.SubmissionSpam, outbox.SubmissionQuarantined:
		f.Status = s
	default:
		return f, apiError(http.StatusBadRequest, fmt.Errorf("status %q: want accepted, spam or quarantined", s))
	}
	var err error
	if f.Since, err = parseWhen(q.Get("since"), now); err != nil {
		return f, apiError(http.StatusBadRequest, fmt.Errorf("since: %w", err))
	}
	if f.Until, err = parseWhen(q.Get("until"), now); err != nil {
		return f, apiError(http.StatusBadRequest, fmt.Errorf("until: %w", err))
	}
	if f.Limit, err = parseLimit(q.Get("limit")); err != nil {
		return f, err
	}
	f.Cursor = q.Get("cursor")
	if _, err := outbox.ParseCursor(f.Cursor); err != nil {
		return f, apiError(http.StatusBadRequest, err)
	}
	return f, nil
}

// deliveryFilter reads status, limit and cursor of the deliveries list.
func deliveryFilter(q url.Values) (outbox.DeliveryFilter, error) {
	if err := onlyParams(q, "status", "limit", "cursor"); err != nil {
		return outbox.DeliveryFilter{}, err
	}
	f := outbox.DeliveryFilter{Status: outbox.DeliveryStatus(q.Get("status")), Cursor: q.Get("cursor")}
	switch f.Status {
	case "", outbox.DeliveryPending, outbox.DeliverySending, outbox.DeliveryFailed,
		outbox.DeliverySent, outbox.DeliveryDead, outbox.DeliverySkipped, outbox.DeliveryParked:
	default:
		return f, apiError(http.StatusBadRequest, fmt.Errorf("status %q: want pending, sending, failed, sent, dead, skipped or parked", f.Status))
	}
	var err error
	if f.Limit, err = parseLimit(q.Get("limit")); err != nil {
		return f, err
	}
	if _, err := outbox.ParseCursor(f.Cursor); err != nil {
		return f, apiError(http.StatusBadRequest, err)
	}
	return f, nil
}

func onlyParams(q url.Values, allowed ...string) error {
	for k := range q {
		if !slices.Contains(allowed, k) {
			return apiError(http.StatusBadRequest, fmt.Errorf("unknown parameter %q (allowed: %v)", k, allowed))
		}
	}
	return nil
}

// parseWhen reads an RFC 3339 time, a date (YYYY-MM-DD, UTC midnight) or a duration
// meaning that long ago ("24h", "7d").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := parseAgo(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a date (2006-01-02) or a duration ago (24h, 7d)", s)
}

// parseAgo is time.ParseDuration with days ("7d", "1d12h") as Caddy's durations have
// them, without importing Caddy: each number followed by d becomes that many times 24h.
func parseAgo(s string) (time.Duration, error) {
	var b strings.Builder
	num := 0 // start of the number being read in s
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'd' {
			days, err := strconv.ParseFloat(s[num:i], 64)
			if err != nil {
				return 0, err
			}
			b.WriteString(strconv.FormatFloat(days*24, 'f', -1, 64) + "h")
			num = i + 1
			continue
		}
		if !isNumberByte(c) {
			b.WriteString(s[num : i+1])
			num = i + 1
		}
	}
	b.WriteString(s[num:])
	return time.ParseDuration(b.String())
}

func isNumberByte(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' }

func parseLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > outbox.MaxListLimit {
		return 0, apiError(http.StatusBadRequest, fmt.Errorf("limit %q: want 1..%d", s, outbox.MaxListLimit))
	}
	return n, nil
}
