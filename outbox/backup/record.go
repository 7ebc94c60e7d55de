package backup

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
)

// line is one record in an object: the spool's own record encoding (so a restore decodes
// it as replay does) and the content of its files, keyed by file id.
type line struct {
	Record json.RawMessage   `json:"record"`
	Files  map[string][]byte `json:"files,omitempty"` // base64 in JSON
}

// encodeObject is the gzip of one JSON line per entry, with file content read from the
// spool (contentPath). A file whose spooled content is gone is shipped as metadata only;
// replay marks it the same way (outbox/spool/files.go).
func encodeObject(entries []spool.Entry, contentPath func(outbox.File) string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, e := range entries {
		rec, err := spool.MarshalEntry(e)
		if err != nil {
			return nil, err
		}
		l := line{Record: rec}
		for _, f := range e.Submission.Files {
			if !f.HasContent {
				continue
			}
			b, err := os.ReadFile(contentPath(f))
			if err != nil {
				continue
			}
			if l.Files == nil {
				l.Files = map[string][]byte{}
			}
			l.Files[f.ID.String()] = b
		}
		if err := enc.Encode(l); err != nil {
			return nil, fmt.Errorf("backup: encode %s: %w", e.Submission.ID, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("backup: compress: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeObject reads the entries of one object, each with its files' content attached;
// a file whose content is absent or does not match its SHA-256 is restored as metadata
// only.
func decodeObject(body []byte) ([]spool.Entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("backup: decompress: %w", err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), 512<<20)
	var out []spool.Entry
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("backup: line %d: %w", len(out)+1, err)
		}
		e, err := spool.UnmarshalEntry(l.Record)
		if err != nil {
			return nil, fmt.Errorf("backup: line %d: %w", len(out)+1, err)
		}
		for i := range e.Submission.Files {
			f := &e.Submission.Files[i]
			if !f.HasContent {
				continue
			}
			b, ok := l.Files[f.ID.String()]
			if !ok || int64(len(b)) != f.Size || sum(b) != f.SHA256 {
				f.HasContent = false
				continue
			}
			f.Content = outbox.BytesContent(b)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("backup: read: %w", err)
	}
	return out, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
