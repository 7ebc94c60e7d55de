package outbox

import "time"

// FloorUnix rounds t down to a multiple of d since the Unix epoch (UTC): the start of
// the `every d` period holding t, for the digests' `every` schedules (outbox/digest) and
// the canary's periods (outbox/canary). time.Time.Truncate counts from the zero time
// instead, which differs from the epoch for a d that does not divide a day.
func FloorUnix(t time.Time, d time.Duration) time.Time {
	n := t.UnixNano()
	q := n / int64(d)
	if n%int64(d) < 0 {
		q--
	}
	return time.Unix(0, q*int64(d)).UTC()
}
