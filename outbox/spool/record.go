package spool

import (
	"encoding/json"
	"fmt"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// recordVersion is the payload encoding written by this code. Readers reject versions
// they do not know rather than guess: such a record is kept aside as corrupt, not lost.
// A record with files is written as recordVersionFiles, so that code from before files
// existed keeps it aside instead of replaying it without them.
const (
	recordVersion      = 1
	recordVersionFiles = 2
)

// Entry is one spooled submission with the deliveries planned for it at intake.
type Entry struct {
	Submission outbox.Submission
	Deliveries []outbox.Delivery
}

// payloadV1 is the on-disk encoding, version 1. Field names are explicit so that a rename
// in outbox never silently changes the format.
type payloadV1 struct {
	V          int          `json:"v"`
	Submission submissionV1 `json:"submission"`
	Deliveries []deliveryV1 `json:"deliveries"`
}

type submissionV1 struct {
	ID             string        `json:"id"`
	Form           string        `json:"form"`
	Status         string        `json:"status"`
	Reason         string        `json:"reason,omitempty"`
	Data           outbox.Fields `json:"data"`
	Meta           outbox.Meta   `json:"meta"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	ContentHash    string        `json:"content_hash,omitempty"`
	Test           bool          `json:"test,omitempty"`
	CreatedAt      string        `json:"created_at"`
	Events         []eventV1     `json:"events,omitempty"`
	Files          []fileV1      `json:"files,omitempty"` // version 2
	// Signals are the spam signals judged at intake; an older binary replaying the
	// record ignores them (the submission is stored, its signals not).
	Signals []outbox.Signal `json:"signals,omitempty"`
}

// fileV1 is a file's metadata; its content is the file files/<id> beside the segments
// (files.go).
type fileV1 struct {
	ID           string `json:"id"`
	Field        string `json:"field"`
	Name         string `json:"name"`
	DeclaredType string `json:"declared_type,omitempty"`
	SniffedType  string `json:"sniffed_type"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	Rejected     string `json:"rejected,omitempty"`
	HasContent   bool   `json:"has_content"`
	CreatedAt    string `json:"created_at"`
}

type eventV1 struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data,omitempty"`
	At   string          `json:"at,omitempty"`
}

type deliveryV1 struct {
	ID            string          `json:"id"`
	Route         string          `json:"route"`
	Channel       string          `json:"channel"`
	Recipient     string          `json:"recipient"`
	Status        string          `json:"status"`
	MaxAttempts   int             `json:"max_attempts"`
	NextAttemptAt string          `json:"next_attempt_at"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	CreatedAt     string          `json:"created_at"`
}

// maxRecord bounds one payload; a length above it is corruption, not a record to allocate.
const maxRecord = 64 << 20

func encodeEntry(e Entry) ([]byte, error) {
	s := e.Submission
	p := payloadV1{V: recordVersion, Submission: submissionV1{
		ID: s.ID.String(), Form: s.Form, Status: string(s.Status), Reason: s.Reason,
		Data: s.Data, Meta: s.Meta, IdempotencyKey: s.IdempotencyKey,
		ContentHash: s.ContentHash, Test: s.Test, CreatedAt: formatTime(s.CreatedAt),
		Signals: s.Signals,
	}}
	for _, ev := range s.Events {
		p.Submission.Events = append(p.Submission.Events, eventV1{Kind: ev.Kind, Data: ev.Data, At: formatTime(ev.At)})
	}
	for _, f := range s.Files {
		p.V = recordVersionFiles
		p.Submission.Files = append(p.Submission.Files, fileV1{
			ID: f.ID.String(), Field: f.Field, Name: f.Name, DeclaredType: f.DeclaredType,
			SniffedType: f.SniffedType, Size: f.Size, SHA256: f.SHA256, Rejected: f.Rejected,
			HasContent: f.HasContent, CreatedAt: formatTime(f.CreatedAt),
		})
	}
	for _, d := range e.Deliveries {
		p.Deliveries = append(p.Deliveries, deliveryV1{
			ID: d.ID.String(), Route: d.Route, Channel: string(d.Channel), Recipient: d.Recipient,
			Status: string(d.Status), MaxAttempts: d.MaxAttempts,
			NextAttemptAt: formatTime(d.NextAttemptAt), Payload: d.Payload,
			CreatedAt: formatTime(d.CreatedAt),
		})
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode spool record %s: %w", s.ID, err)
	}
	if len(b) > maxRecord {
		return nil, fmt.Errorf("encode spool record %s: %d bytes is over the %d byte limit", s.ID, len(b), maxRecord)
	}
	return b, nil
}

func decodeEntry(b []byte) (Entry, error) {
	var head struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Entry{}, fmt.Errorf("decode spool record: %w", err)
	}
	if head.V != recordVersion && head.V != recordVersionFiles {
		return Entry{}, fmt.Errorf("decode spool record: unknown version %d", head.V)
	}
	var p payloadV1
	if err := json.Unmarshal(b, &p); err != nil {
		return Entry{}, fmt.Errorf("decode spool record: %w", err)
	}
	var e Entry
	var err error
	ps := p.Submission
	s := &e.Submission
	if s.ID, err = parseID(ps.ID); err != nil {
		return Entry{}, err
	}
	s.Form, s.Status, s.Reason = ps.Form, outbox.SubmissionStatus(ps.Status), ps.Reason
	s.Data, s.Meta, s.IdempotencyKey = ps.Data, ps.Meta, ps.IdempotencyKey
	s.ContentHash, s.Test, s.Signals = ps.ContentHash, ps.Test, ps.Signals
	if s.CreatedAt, err = parseTime(ps.CreatedAt); err != nil {
		return Entry{}, err
	}
	for _, pe := range ps.Events {
		ev := outbox.Event{Kind: pe.Kind, Data: pe.Data, SubmissionID: s.ID}
		if ev.At, err = parseTime(pe.At); err != nil {
			return Entry{}, err
		}
		s.Events = append(s.Events, ev)
	}
	for _, pf := range ps.Files {
		f := outbox.File{SubmissionID: s.ID, Field: pf.Field, Name: pf.Name, DeclaredType: pf.DeclaredType,
			SniffedType: pf.SniffedType, Size: pf.Size, SHA256: pf.SHA256, Rejected: pf.Rejected,
			HasContent: pf.HasContent}
		if f.ID, err = parseID(pf.ID); err != nil {
			return Entry{}, err
		}
		if f.CreatedAt, err = parseTime(pf.CreatedAt); err != nil {
			return Entry{}, err
		}
		s.Files = append(s.Files, f)
	}
	for _, pd := range p.Deliveries {
		d := outbox.Delivery{
			SubmissionID: s.ID, Route: pd.Route, Channel: outbox.Channel(pd.Channel),
			Recipient: pd.Recipient, Status: outbox.DeliveryStatus(pd.Status),
			MaxAttempts: pd.MaxAttempts, Payload: pd.Payload,
		}
		if d.ID, err = parseID(pd.ID); err != nil {
			return Entry{}, err
		}
		if d.NextAttemptAt, err = parseTime(pd.NextAttemptAt); err != nil {
			return Entry{}, err
		}
		if d.CreatedAt, err = parseTime(pd.CreatedAt); err != nil {
			return Entry{}, err
		}
		e.Deliveries = append(e.Deliveries, d)
	}
	return e, nil
}

// MarshalEntry is the versioned JSON of one record, as a segment frames it (without
// file content, which travels beside it). A shipper copies it off the host
// (outbox/backup) so that a restore decodes it with UnmarshalEntry, exactly as replay does.
func MarshalEntry(e Entry) ([]byte, error) { return encodeEntry(e) }

// UnmarshalEntry decodes what MarshalEntry wrote; it refuses versions it does not know.
func UnmarshalEntry(b []byte) (Entry, error) { return decodeEntry(b) }
