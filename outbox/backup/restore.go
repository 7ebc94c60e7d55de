package backup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Window selects what a restore considers: records created in [Since, Until), of Form
// when set.
type Window struct {
	Since, Until time.Time
	Form         string
}

func (w Window) has(sub *outbox.Submission) bool {
	return !sub.CreatedAt.Before(w.Since) && sub.CreatedAt.Before(w.Until) && (w.Form == "" || sub.Form == w.Form)
}

// RestoreReport is what one restore found and did.
type RestoreReport struct {
	DryRun   bool       `json:"dry_run"`
	Objects  int        `json:"objects"`  // objects read in the window's listing
	Records  int        `json:"records"`  // distinct records in the window (and form)
	Stored   int        `json:"stored"`   // written to the store now (with DryRun: would be)
	Present  int        `json:"present"`  // already in the store: same id, or a key bound to the same content
	Corrupt  int        `json:"corrupt"`  // objects that failed their checksum or did not decode: nothing read from them
	Erased   int        `json:"erased"`   // erased in this database (an erasure request): never restored
	Restored []Restored `json:"restored"` // ids, forms and times only: no visitor data
}

// Restored is one record a restore stored, or with DryRun would store.
type Restored struct {
	ID        uuid.UUID `json:"id"`
	Form      string    `json:"form"`
	CreatedAt time.Time `json:"created_at"`
	// Deliveries planned again with it (pending ones are sent by the worker).
	Deliveries int `json:"deliveries"`
}

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// DryRun writes nothing; a record counts as present when its submission id is stored.
	DryRun bool
	// SkipDeliveries stores the restored submissions with every delivery skipped: nothing
	// is sent again, at the price of never sending what was not sent before the loss.
	SkipDeliveries bool
}

// ErrCorrupt is returned (with the report) when some object failed its checksum.
var ErrCorrupt = errors.New("backup: some objects failed their checksum and were skipped")

// Restore stores the window's backed-up records that store lacks. Each record goes
// through outbox.Accept, the path spool replay takes: a submission id already stored,
// or an idempotency key bound to the same content, writes nothing, so running it twice
// stores nothing the second time. A record is stored with its deliveries as intake
// planned them; the worker sends the pending ones (docs/operations.md, "Off-host
// backups", says which can be sent twice).
func Restore(ctx context.Context, b Bucket, prefix string, store outbox.Store, w Window, opt RestoreOptions) (RestoreReport, error) {
	rep := RestoreReport{DryRun: opt.DryRun}
	if !w.Until.After(w.Since) {
		return rep, fmt.Errorf("backup: restore window: until (%s) must be after since (%s)", w.Until.Format(time.RFC3339), w.Since.Format(time.RFC3339))
	}
	var keys []string
	for _, p := range dayPrefixes(prefix, w.Since, w.Until) {
		ks, err := b.List(ctx, p)
		if err != nil {
			return rep, err
		}
		for _, k := range ks {
			if t, ok := keyTimeOf(k); ok && !t.After(w.Until) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	erased, err := erasedIDs(ctx, store)
	if err != nil {
		return rep, err
	}
	seen := map[uuid.UUID]bool{} // a segment shipped twice under two names
	var corrupt error
	for _, key := range keys {
		body, meta, err := b.Get(ctx, key)
		if err != nil {
			return rep, err
		}
		rep.Objects++
		if meta == "" || sum(body) != meta {
			rep.Corrupt++
			corrupt = ErrCorrupt
			continue
		}
		entries, err := decodeObject(body)
		if err != nil {
			rep.Corrupt++
			corrupt = ErrCorrupt
			continue
		}
		for _, e := range entries {
			sub := e.Submission
			if !w.has(&sub) || seen[sub.ID] {
				continue
			}
			seen[sub.ID] = true
			rep.Records++
			if erased[sub.ID] {
				rep.Erased++
				continue
			}
			ds := e.Deliveries
			if opt.SkipDeliveries {
				ds = skipped(ds)
			}
			stored, err := restoreOne(ctx, store, &sub, ds, opt.DryRun)
			if err != nil {
				return rep, err
			}
			if !stored {
				rep.Present++
				continue
			}
			rep.Stored++
			rep.Restored = append(rep.Restored, Restored{ID: sub.ID, Form: sub.Form, CreatedAt: sub.CreatedAt, Deliveries: len(e.Deliveries)})
		}
	}
	return rep, corrupt
}

// restoreOne stores one record unless the store has it; it reports whether it stored it.
func restoreOne(ctx context.Context, store outbox.Store, sub *outbox.Submission, ds []outbox.Delivery, dry bool) (bool, error) {
	if dry {
		_, err := store.GetSubmission(ctx, sub.ID)
		if errors.Is(err, outbox.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("backup: restore %s: %w", sub.ID, err)
		}
		return false, nil
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second+outbox.FileAllowance(sub))
	defer cancel()
	res, err := outbox.Accept(actx, store, sub, ds)
	if err != nil {
		return false, fmt.Errorf("backup: restore %s: %w", sub.ID, err)
	}
	return !res.Duplicate, nil
}

// erasedIDs are the submissions erased on request in this database (their
// submission.erased events, outbox/ops.go): a backup still holds them, and restoring them
// would undo the erasure. A database that lost its events (a host lost with its SQLite
// file) cannot say; docs/operations.md, "Off-host backups", tells the operator so.
func erasedIDs(ctx context.Context, store outbox.Store) (map[uuid.UUID]bool, error) {
	evs, err := store.ListEvents(ctx, outbox.EventSubmissionErased, 0)
	if err != nil {
		return nil, fmt.Errorf("backup: restore: read erasures: %w", err)
	}
	out := make(map[uuid.UUID]bool, len(evs))
	for _, ev := range evs {
		if ev.SubmissionID != uuid.Nil {
			out[ev.SubmissionID] = true
		}
	}
	return out, nil
}

// skipped is ds with every delivery skipped (RestoreOptions.SkipDeliveries).
func skipped(ds []outbox.Delivery) []outbox.Delivery {
	out := make([]outbox.Delivery, len(ds))
	for i, d := range ds {
		d.Status = outbox.DeliverySkipped
		out[i] = d
	}
	return out
}
