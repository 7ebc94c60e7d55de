// Package digest turns a digest route's schedule into periods and closes them: when a
// period has ended, it writes one digest delivery per recipient listing the form's
// accepted submissions of that period (docs/design.md, "Digests"). It does not import
// Caddy; the App starts a Closer beside the worker.
package digest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	// Time zones are named in the Caddyfile (daily at 08:00 Europe/Berlin); embedding the
	// zone database makes them work on a host without /usr/share/zoneinfo too.
	_ "time/tzdata"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Schedule cuts time into consecutive periods [Start(t), Next(Start(t))).
type Schedule struct {
	kind    kind
	every   time.Duration // kindEvery
	hour    int           // kindDaily, kindWeekly
	minute  int
	weekday time.Weekday // kindWeekly
	loc     *time.Location
	spec    string
}

type kind int

const (
	kindHourly kind = iota + 1
	kindDaily
	kindWeekly
	kindEvery
)

// MinEvery is the shortest `every` period.
const MinEvery = time.Second

// Parse reads a schedule: `hourly`, `daily at HH:MM [TZ]`, `weekly WEEKDAY HH:MM [TZ]` or
// `every DURATION` (a Go duration of at least a second, aligned to the Unix epoch in UTC).
// TZ is an IANA zone name such as Europe/Berlin; the default is UTC.
func Parse(spec string) (Schedule, error) {
	args := strings.Fields(spec)
	if len(args) == 0 {
		return Schedule{}, errors.New("want hourly, daily at HH:MM [TZ], weekly WEEKDAY HH:MM [TZ] or every DURATION")
	}
	s := Schedule{loc: time.UTC, spec: strings.Join(args, " ")}
	var err error
	switch args[0] {
	case "hourly":
		if len(args) != 1 {
			return Schedule{}, errors.New("hourly takes no arguments (periods start at each full hour, UTC)")
		}
		s.kind = kindHourly
	case "daily":
		if len(args) < 3 || len(args) > 4 || args[1] != "at" {
			return Schedule{}, errors.New("want daily at HH:MM [TZ]")
		}
		s.kind = kindDaily
		if s.hour, s.minute, err = parseClock(args[2]); err != nil {
			return Schedule{}, err
		}
		if len(args) == 4 {
			if s.loc, err = parseZone(args[3]); err != nil {
				return Schedule{}, err
			}
		}
	case "weekly":
		if len(args) < 3 || len(args) > 4 {
			return Schedule{}, errors.New("want weekly WEEKDAY HH:MM [TZ]")
		}
		s.kind = kindWeekly
		if s.weekday, err = parseWeekday(args[1]); err != nil {
			return Schedule{}, err
		}
		if s.hour, s.minute, err = parseClock(args[2]); err != nil {
			return Schedule{}, err
		}
		if len(args) == 4 {
			if s.loc, err = parseZone(args[3]); err != nil {
				return Schedule{}, err
			}
		}
	case "every":
		if len(args) != 2 {
			return Schedule{}, errors.New("want every DURATION, e.g. every 30m")
		}
		s.kind = kindEvery
		if s.every, err = time.ParseDuration(args[1]); err != nil {
			return Schedule{}, fmt.Errorf("every %s: %v", args[1], err)
		}
		if s.every < MinEvery {
			return Schedule{}, fmt.Errorf("every %s: the period must be at least %s", args[1], MinEvery)
		}
	default:
		return Schedule{}, fmt.Errorf("unknown schedule %q: want hourly, daily, weekly or every", args[0])
	}
	return s, nil
}

func parseClock(v string) (hour, minute int, err error) {
	h, m, ok := strings.Cut(v, ":")
	if ok && len(h) == 2 && len(m) == 2 {
		hour, herr := strconv.Atoi(h)
		minute, merr := strconv.Atoi(m)
		if herr == nil && merr == nil && hour >= 0 && hour < 24 && minute >= 0 && minute < 60 {
			return hour, minute, nil
		}
	}
	return 0, 0, fmt.Errorf("time %q: want HH:MM, 00:00 to 23:59", v)
}

func parseZone(v string) (*time.Location, error) {
	// LoadLocation also takes "" and "Local", which would make the period depend on the
	// host's settings: only IANA names and UTC are accepted.
	if v == "" || v == "Local" {
		return nil, fmt.Errorf("time zone %q: want an IANA name such as Europe/Berlin, or UTC", v)
	}
	loc, err := time.LoadLocation(v)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: want an IANA name such as Europe/Berlin, or UTC", v)
	}
	return loc, nil
}

func parseWeekday(v string) (time.Weekday, error) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.EqualFold(v, d.String()) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("weekday %q: want monday ... sunday", v)
}

// String is the schedule as it was written (fields separated by one space).
func (s Schedule) String() string { return s.spec }

// IsZero reports a Schedule that was not parsed.
func (s Schedule) IsZero() bool { return s.kind == 0 }

// Location is the schedule's time zone (UTC for hourly and every).
func (s Schedule) Location() *time.Location { return s.loc }

// Start is the start of the period holding t: the latest boundary at or before t.
func (s Schedule) Start(t time.Time) time.Time {
	switch s.kind {
	case kindHourly:
		return outbox.FloorUnix(t, time.Hour)
	case kindEvery:
		return outbox.FloorUnix(t, s.every)
	case kindDaily:
		l := t.In(s.loc)
		b := s.at(l.Year(), l.Month(), l.Day())
		if b.After(t) {
			b = s.at(l.Year(), l.Month(), l.Day()-1)
		}
		return b
	case kindWeekly:
		l := t.In(s.loc)
		back := (int(l.Weekday()) - int(s.weekday) + 7) % 7
		b := s.at(l.Year(), l.Month(), l.Day()-back)
		if b.After(t) {
			b = s.at(l.Year(), l.Month(), l.Day()-back-7)
		}
		return b
	}
	panic("digest: Start on a zero Schedule")
}

// Next is the end of the period that starts at start (a value Start returned), which is
// the start of the following one. Daily and weekly periods follow the wall clock of their
// zone, so a period across a daylight saving change is an hour shorter or longer.
func (s Schedule) Next(start time.Time) time.Time {
	switch s.kind {
	case kindHourly:
		return start.Add(time.Hour)
	case kindEvery:
		return start.Add(s.every)
	case kindDaily:
		l := start.In(s.loc)
		return s.nextAfter(start, l.Year(), l.Month(), l.Day()+1, 1)
	case kindWeekly:
		l := start.In(s.loc)
		return s.nextAfter(start, l.Year(), l.Month(), l.Day()+7, 7)
	}
	panic("digest: Next on a zero Schedule")
}

// nextAfter is the first boundary after start from the given day on, stepping step days.
// It steps again only if a boundary normalised across a daylight saving gap (02:30 on the
// day the clocks skip 02:00-03:00) did not move past start.
func (s Schedule) nextAfter(start time.Time, y int, m time.Month, d, step int) time.Time {
	for {
		if b := s.at(y, m, d); b.After(start) {
			return b
		}
		d += step
	}
}

// at is the boundary on a local date. A wall time that does not exist on that date (the
// hour skipped when daylight saving starts) is normalised by time.Date, the same way for
// Start and Next, so boundaries stay consistent.
func (s Schedule) at(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, s.hour, s.minute, 0, 0, s.loc).UTC()
}

// Describe names the period [start, end) for a subject line and the digest body, in the
// schedule's zone.
func (s Schedule) Describe(start, end time.Time) string {
	ls, le := start.In(s.loc), end.In(s.loc)
	const day, clock = "2006-01-02", "15:04"
	zone := s.loc.String()
	if s.kind == kindEvery && s.every%time.Minute != 0 {
		return ls.Format(day+" 15:04:05") + " – " + le.Format("15:04:05") + " " + zone
	}
	if ls.Format(day) == le.Format(day) {
		return ls.Format(day+" "+clock) + " – " + le.Format(clock) + " " + zone
	}
	return ls.Format(day+" "+clock) + " – " + le.Format(day+" "+clock) + " " + zone
}
