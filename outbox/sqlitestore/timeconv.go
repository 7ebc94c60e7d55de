package sqlitestore

import (
	"database/sql"
	"time"
)

// Times are stored as INTEGER unix microseconds (UTC): the same precision PostgreSQL
// keeps, and numbers sort the way the claim query needs.

func micros(t time.Time) int64 { return t.UnixMicro() }

// nullMicros stores the zero time as NULL (not leased, not sent).
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// orNow lets callers leave a time unset and get the present instead.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
