package backup

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
)

// layout is the format version in every key: a later encoding gets a new one, and a
// restore reads only the versions it knows.
const layout = "v1"

// keyTime is the time part of an object's name: the creation time of its oldest record,
// to the second, in UTC.
const keyTime = "T15-04-05Z"

// ObjectKey names the object of one segment: PREFIX/v1/YYYY/MM/DD/THH-MM-SSZ_INSTANCE_ID.jsonl.gz,
// where ID is the first record's submission id. The id, not the segment's number, ends
// the name because segment numbers start again on a host whose spool was emptied: a
// segment shipped twice (a crash before the spool noted it shipped) overwrites its own
// object instead of adding a second one.
func ObjectKey(prefix string, oldest time.Time, instance string, first uuid.UUID) string {
	t := oldest.UTC()
	return path.Join(prefix, layout, t.Format("2006/01/02"), t.Format(keyTime)+"_"+instance+"_"+first.String()+".jsonl.gz")
}

var keyRE = regexp.MustCompile(`/v1/(\d{4}/\d{2}/\d{2})/(T\d{2}-\d{2}-\d{2}Z)_[^/]+\.jsonl\.gz$`)

// keyTimeOf is the time in an object's name; false for a key this layout did not write.
func keyTimeOf(key string) (time.Time, bool) {
	m := keyRE.FindStringSubmatch("/" + key)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.Parse("2006/01/02T15-04-05Z", m[1]+m[2])
	return t, err == nil
}

// dayPrefixes are the listing prefixes of the days an object of the window can be named
// by. An object is named by its oldest record, and a segment is sealed at least every
// replay tick (seconds), so a record of the window sits in an object named at most a day
// before the window: listing from the day before is enough.
func dayPrefixes(prefix string, since, until time.Time) []string {
	var out []string
	start := since.UTC().Add(-24 * time.Hour).Truncate(24 * time.Hour)
	for d := start; !d.After(until.UTC()); d = d.Add(24 * time.Hour) {
		out = append(out, path.Join(prefix, layout, d.Format("2006/01/02"))+"/")
	}
	return out
}

// instanceName makes a host name safe inside a key (letters, digits, '-', '.').
func instanceName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	if b.Len() == 0 {
		return "instance"
	}
	return b.String()
}

// ParseURL splits s3://bucket/prefix.
func ParseURL(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("backup: %q is not an s3://bucket/prefix URL", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("backup: %q names no bucket", u)
	}
	return bucket, strings.Trim(prefix, "/"), nil
}
