package backup_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/internal/s3test"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
	"github.com/formoutbox/caddy-form-outbox/outbox/spool"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

const prefix = "site/backups"

func bucketOn(t *testing.T, srv *s3test.Server) *backup.S3 {
	t.Helper()
	b, err := backup.NewS3(context.Background(), backup.Config{
		URL: "s3://" + srv.Bucket + "/" + prefix, Endpoint: srv.URL(), Region: "us-east-1",
		AccessKeyID: "test", SecretAccessKey: "test", PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rig is a write-ahead spool (as `spool always` runs it) with a shipper to a bucket on
// loopback and a store.
type rig struct {
	srv     *s3test.Server
	bucket  *backup.S3
	spool   *spool.Spool
	store   outbox.Store
	shipper *backup.Shipper
	accept  *outbox.Acceptor
}

func newRig(t *testing.T, store outbox.Store) *rig {
	t.Helper()
	srv := s3test.Start(t, "forms")
	b := bucketOn(t, srv)
	sp, err := spool.Open(t.TempDir(), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	sh := &backup.Shipper{Spool: sp, Bucket: b, Prefix: b.Prefix, Instance: "web-1"}
	sp.Hold()
	acc := &outbox.Acceptor{Store: store, WriteAhead: true}
	acc.SetSpool(&spool.Fallback{Spool: sp, Replayer: &spool.Replayer{Spool: sp, Store: store}})
	return &rig{srv: srv, bucket: b, spool: sp, store: store, shipper: sh, accept: acc}
}

// post accepts one submission as intake does and returns it.
func (r *rig) post(t *testing.T, form string, opts ...storetest.SubmissionOption) *outbox.Submission {
	t.Helper()
	sub := storetest.NewSubmission(form, opts...)
	res, err := r.accept.Accept(context.Background(), sub, []outbox.Delivery{storetest.NewDelivery(sub, "email-0", "team@example.com")})
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	if res.Status != outbox.SubmissionAccepted {
		t.Fatalf("accept status = %s; want accepted", res.Status)
	}
	return sub
}

// replay runs the replayer's pass (under `spool always` it finds every record stored).
func (r *rig) replay(t *testing.T) {
	t.Helper()
	if _, err := r.spool.Replay(context.Background(), r.store, nil); err != nil {
		t.Fatal(err)
	}
}

func keys(t *testing.T, b backup.Bucket) []string {
	t.Helper()
	ks, err := b.List(context.Background(), prefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestShipperPutsPostedRecordInBucket(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	sub := storetest.NewSubmission("contact")
	content := bytes.Repeat([]byte("cv "), 1000)
	sub.Files = []outbox.File{storetest.NewFile(sub, "cv", "cv.pdf", content)}
	if _, err := r.accept.Accept(context.Background(), sub, []outbox.Delivery{storetest.NewDelivery(sub, "email-0", "team@example.com")}); err != nil {
		t.Fatal(err)
	}
	r.replay(t)
	if err := r.shipper.ShipNow(context.Background()); err != nil {
		t.Fatalf("ship: %v", err)
	}
	ks := keys(t, r.bucket)
	want := prefix + "/v1/" + sub.CreatedAt.UTC().Format("2006/01/02/T15-04-05Z") + "_web-1_" + sub.ID.String() + ".jsonl.gz"
	if len(ks) != 1 || ks[0] != want {
		t.Fatalf("bucket keys = %v; want [%s]", ks, want)
	}
	if st := r.shipper.Stats(); st.Objects != 1 || st.Records != 1 || st.ByForm["contact"] != 1 {
		t.Fatalf("stats = %+v; want 1 object, 1 record of form contact", st)
	}
	if st := r.spool.Stats(); st.Segments != 0 {
		t.Fatalf("spool after ship and replay = %+v; want the journal released", st)
	}

	// The object restores the record with its file into an empty database.
	empty := storetest.OpenSQLite(t)
	rep, err := backup.Restore(context.Background(), r.bucket, prefix, empty, window(), backup.RestoreOptions{})
	if err != nil || rep.Stored != 1 {
		t.Fatalf("restore = %+v, %v; want 1 stored", rep, err)
	}
	files, err := empty.SubmissionFiles(context.Background(), sub.ID)
	if err != nil || len(files) != 1 {
		t.Fatalf("files = %v, %v", files, err)
	}
	var got bytes.Buffer
	if _, err := empty.CopyFile(context.Background(), files[0].ID, &got); err != nil || !bytes.Equal(got.Bytes(), content) {
		t.Fatalf("restored file content differs (%d bytes, %v)", got.Len(), err)
	}
}

func window() backup.Window {
	return backup.Window{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour)}
}

// The bucket down: posts are answered as usual, the journal keeps their records, and
// they are shipped once the bucket is back.
func TestShipperBucketDownKeepsJournalUntilConfirmed(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	r.srv.Down()
	var posted []*outbox.Submission
	for i := 0; i < 5; i++ {
		posted = append(posted, r.post(t, "contact"))
	}
	r.replay(t)
	if err := r.shipper.ShipNow(context.Background()); err == nil {
		t.Fatal("ship with the bucket down succeeded")
	}
	if st := r.shipper.Stats(); st.LastError == "" || st.Objects != 0 {
		t.Fatalf("stats = %+v; want the failure recorded, nothing shipped", st)
	}
	if lag := r.shipper.Lag(); lag.Records != 5 || lag.Bytes == 0 {
		t.Fatalf("lag = %+v; want 5 records kept", lag)
	}
	if st := r.spool.Stats(); st.Entries != 0 || st.Unshipped != 5 {
		t.Fatalf("spool = %+v; want all stored, all kept for the bucket", st)
	}
	r.srv.Up(t)
	if err := r.shipper.ShipNow(context.Background()); err != nil {
		t.Fatalf("ship after the bucket came back: %v", err)
	}
	if lag := r.shipper.Lag(); lag.Records != 0 {
		t.Fatalf("lag = %+v; want nothing left", lag)
	}
	rep, err := backup.Restore(context.Background(), r.bucket, prefix, storetest.OpenSQLite(t), window(), backup.RestoreOptions{DryRun: true})
	if err != nil || rep.Stored != len(posted) {
		t.Fatalf("dry-run restore into an empty store = %+v, %v; want all %d", rep, err, len(posted))
	}
}

// An object the bucket stored with another checksum is not confirmed: the journal stays.
func TestShipperKeepsJournalWhenBucketDisagrees(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	r.shipper.Bucket = lyingBucket{r.bucket}
	r.post(t, "contact")
	r.replay(t)
	err := r.shipper.ShipNow(context.Background())
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("ship = %v; want a checksum mismatch", err)
	}
	if st := r.spool.Stats(); st.Unshipped != 1 {
		t.Fatalf("spool = %+v; want the record kept", st)
	}
}

type lyingBucket struct{ backup.Bucket }

func (l lyingBucket) Head(ctx context.Context, key string) (string, int64, error) {
	_, n, err := l.Bucket.Head(ctx, key)
	return strings.Repeat("0", 64), n, err
}

// Past max_local the oldest journal already in the store is released and counted.
func TestShipperMaxLocalReleasesStoredJournal(t *testing.T) {
	r := newRig(t, storetest.OpenSQLite(t))
	r.shipper.MaxLocal = 1 // any record is over the bound
	r.srv.Down()
	r.post(t, "contact")
	r.replay(t)
	_ = r.shipper.ShipNow(context.Background())
	if st := r.shipper.Stats(); st.Dropped != 1 {
		t.Fatalf("stats = %+v; want 1 record dropped", st)
	}
	if st := r.spool.Stats(); st.Segments != 0 {
		t.Fatalf("spool = %+v; want the segment released", st)
	}
}

// Restore stores exactly what the database lacks, in the window and form asked, and
// nothing the second time; on every store.
func TestRestoreStoresOnlyMissingIdempotently(t *testing.T) {
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			r := newRig(t, store)
			// The store write fails for a third of the posts after the journal took them,
			// and the host is lost before replay: only the bucket has those.
			var all []*outbox.Submission
			missing := map[uuid.UUID]bool{}
			faulty := &failingStore{Store: store, fail: missing}
			r.accept.Store = faulty
			for i := 0; i < 6; i++ {
				form := "contact"
				if i%3 == 2 {
					form = "quote"
				}
				sub := storetest.NewSubmission(form, storetest.WithIdempotencyKey(uuid.NewString()))
				if i%2 == 0 {
					missing[sub.ID] = true
				}
				if _, err := r.accept.Accept(ctx, sub, []outbox.Delivery{storetest.NewDelivery(sub, "email-0", "team@example.com")}); err != nil {
					t.Fatal(err)
				}
				all = append(all, sub)
			}
			if err := r.shipper.ShipNow(ctx); err != nil {
				t.Fatal(err)
			}

			dry, err := backup.Restore(ctx, r.bucket, prefix, store, window(), backup.RestoreOptions{DryRun: true})
			if len(missing) != 3 || err != nil || dry.Stored != 3 || dry.Present != 3 {
				t.Fatalf("dry run = %+v, %v; want 3 to store, 3 present", dry, err)
			}
			if _, err := store.GetSubmission(ctx, all[0].ID); !errors.Is(err, outbox.ErrNotFound) {
				t.Fatalf("dry run stored %s: %v", all[0].ID, err)
			}

			// The form filter: only quote's missing one (all[2]).
			w := window()
			w.Form = "quote"
			rep, err := backup.Restore(ctx, r.bucket, prefix, store, w, backup.RestoreOptions{})
			if err != nil || rep.Stored != 1 || rep.Restored[0].ID != all[2].ID {
				t.Fatalf("restore quote = %+v, %v; want %s only", rep, err, all[2].ID)
			}
			rep, err = backup.Restore(ctx, r.bucket, prefix, store, window(), backup.RestoreOptions{})
			if err != nil || rep.Stored != 2 || rep.Present != 4 {
				t.Fatalf("restore = %+v, %v; want the 2 other missing stored", rep, err)
			}
			for _, s := range all {
				got, err := store.GetSubmission(ctx, s.ID)
				if err != nil || got.Form != s.Form {
					t.Fatalf("submission %s after restore: %v", s.ID, err)
				}
				ds, err := store.ListDeliveries(ctx, s.ID)
				if err != nil || len(ds) != 1 {
					t.Fatalf("deliveries of %s = %d, %v; want 1", s.ID, len(ds), err)
				}
				if missing[s.ID] && ds[0].Status != outbox.DeliveryPending {
					t.Fatalf("restored delivery status = %s; want pending (planned again)", ds[0].Status)
				}
			}
			again, err := backup.Restore(ctx, r.bucket, prefix, store, window(), backup.RestoreOptions{})
			if err != nil || again.Stored != 0 || again.Present != 6 {
				t.Fatalf("second restore = %+v, %v; want nothing stored", again, err)
			}
			// A window that ends before the posts finds none of them.
			early := backup.Window{Since: time.Now().Add(-3 * time.Hour), Until: all[0].CreatedAt.Add(-time.Second)}
			if rep, err := backup.Restore(ctx, r.bucket, prefix, store, early, backup.RestoreOptions{DryRun: true}); err != nil || rep.Records != 0 {
				t.Fatalf("early window = %+v, %v; want no records", rep, err)
			}
		})
	}
}

// An object whose body does not match its checksum is skipped and reported.
func TestRestoreSkipsObjectFailingChecksum(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, storetest.OpenSQLite(t))
	r.post(t, "contact")
	r.replay(t)
	if err := r.shipper.ShipNow(ctx); err != nil {
		t.Fatal(err)
	}
	k := keys(t, r.bucket)[0]
	body, _, err := r.bucket.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)/2] ^= 0xff
	if err := r.bucket.Put(ctx, k, body, strings.Repeat("1", 64)); err != nil {
		t.Fatal(err)
	}
	empty := storetest.OpenSQLite(t)
	rep, err := backup.Restore(ctx, r.bucket, prefix, empty, window(), backup.RestoreOptions{})
	if !errors.Is(err, backup.ErrCorrupt) || rep.Corrupt != 1 || rep.Stored != 0 {
		t.Fatalf("restore = %+v, %v; want the object skipped as corrupt", rep, err)
	}
}

func deleteSubmission(t *testing.T, s outbox.Store, id uuid.UUID) {
	t.Helper()
	if err := s.DeleteSubmission(context.Background(), id, time.Now()); err != nil {
		t.Fatalf("delete %s: %v", id, err)
	}
}

// failingStore fails the store write of the submissions in fail, as a store fault after
// the journal would.
type failingStore struct {
	outbox.Store
	fail map[uuid.UUID]bool
}

func (f *failingStore) AcceptBatch(ctx context.Context, items []outbox.AcceptItem) []outbox.AcceptOutcome {
	out := make([]outbox.AcceptOutcome, len(items))
	for i, it := range items {
		if f.fail[it.Submission.ID] {
			out[i].Err = errors.New("injected store fault")
			continue
		}
		out[i] = f.Store.AcceptBatch(ctx, []outbox.AcceptItem{it})[0]
	}
	return out
}

// A submission erased on request is not brought back by a restore of its window.
func TestRestoreSkipsErasedSubmission(t *testing.T) {
	ctx := context.Background()
	store := storetest.OpenSQLite(t)
	r := newRig(t, store)
	gone := r.post(t, "contact")
	r.post(t, "contact") // kept: counted present
	r.replay(t)
	if err := r.shipper.ShipNow(ctx); err != nil {
		t.Fatal(err)
	}
	deleteSubmission(t, store, gone.ID)
	rep, err := backup.Restore(ctx, r.bucket, prefix, store, window(), backup.RestoreOptions{})
	if err != nil || rep.Stored != 0 || rep.Erased != 1 || rep.Present != 1 {
		t.Fatalf("restore = %+v, %v; want the erased one skipped", rep, err)
	}
	if _, err := store.GetSubmission(ctx, gone.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("erased submission restored: %v", err)
	}
}

// With SkipDeliveries the restored submissions come back with nothing to send.
func TestRestoreSkipDeliveriesPlansNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, storetest.OpenSQLite(t))
	sub := r.post(t, "contact")
	if err := r.shipper.ShipNow(ctx); err != nil {
		t.Fatal(err)
	}
	empty := storetest.OpenSQLite(t)
	rep, err := backup.Restore(ctx, r.bucket, prefix, empty, window(), backup.RestoreOptions{SkipDeliveries: true})
	if err != nil || rep.Stored != 1 {
		t.Fatalf("restore = %+v, %v", rep, err)
	}
	ds, err := empty.ListDeliveries(ctx, sub.ID)
	if err != nil || len(ds) != 1 || ds[0].Status != outbox.DeliverySkipped {
		t.Fatalf("deliveries = %+v, %v; want one skipped", ds, err)
	}
	if st, err := empty.Stats(ctx, time.Now()); err != nil || st.Backlog != 0 {
		t.Fatalf("backlog = %+v, %v; want nothing to send", st, err)
	}
}
