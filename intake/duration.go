package intake

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that reads like Caddy's JSON durations ("10s", "1m", or a
// number of nanoseconds) without importing Caddy, and writes itself as a string.
type Duration time.Duration

// MarshalJSON writes the duration as Go duration text, e.g. "1m0s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts "90s"-style text or an integer number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"10s\" or nanoseconds, got %s", b)
	}
	*d = Duration(n)
	return nil
}
