package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// NewFile is a file of sub's field holding content, with its size and SHA-256.
func NewFile(sub *outbox.Submission, field, name string, content []byte) outbox.File {
	sum := sha256.Sum256(content)
	return outbox.File{
		ID: uuid.Must(uuid.NewV7()), SubmissionID: sub.ID, Field: field, Name: name,
		DeclaredType: "application/pdf", SniffedType: "application/pdf",
		Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), HasContent: true,
		CreatedAt: sub.CreatedAt, Content: outbox.BytesContent(content),
	}
}

// pattern returns n bytes that differ from chunk to chunk, so a store that mixes up or
// repeats chunks fails the comparison.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/outbox.FileChunkSize)
	}
	return b
}

func storedContent(t *testing.T, s outbox.Store, id uuid.UUID) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.CopyFile(testCtx(t), id, &buf)
	if err != nil {
		t.Fatalf("copy file %s: %v", id, err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("copy file %s reported %d bytes, wrote %d", id, n, buf.Len())
	}
	return buf.Bytes()
}

func checkNoFiles(t *testing.T, s outbox.Store, sub *outbox.Submission) {
	t.Helper()
	if files, err := s.SubmissionFiles(testCtx(t), sub.ID); err != nil || len(files) != 0 {
		t.Errorf("files of %s = %d (err %v), want none", sub.ID, len(files), err)
	}
	for _, f := range sub.Files {
		if _, err := s.GetFile(testCtx(t), f.ID); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("get file %s: err = %v, want ErrNotFound", f.ID, err)
		}
		if _, err := s.CopyFile(testCtx(t), f.ID, &bytes.Buffer{}); !errors.Is(err, outbox.ErrNotFound) {
			t.Errorf("copy file %s: err = %v, want ErrNotFound", f.ID, err)
		}
	}
}

// A committed submission has its files, content byte for byte (several chunks) and
// metadata as given, in the order posted; a file kept as metadata only has no content.
var _ = register("AcceptStoresFilesWithTheSubmission", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("apply")
	big := pattern(2*outbox.FileChunkSize + 123)
	sub.Files = []outbox.File{
		NewFile(sub, "cv", "cv.pdf", big),
		NewFile(sub, "photos", "a.png", []byte("\x89PNG\r\n\x1a\nsmall")),
		NewFile(sub, "photos", "empty.png", nil),
	}
	sub.Files[1].DeclaredType, sub.Files[1].SniffedType = "image/jpeg", "image/png"
	sub.Files[2].Rejected = outbox.FileEmpty
	meta := NewFile(sub, "other", "x.html", []byte("<html>"))
	meta.HasContent, meta.Content = false, nil
	sub.Files = append(sub.Files, meta)

	if _, err := outbox.AcceptOne(ctx, s, sub, []outbox.Delivery{NewDelivery(sub, "email", "hr@example.com")}); err != nil {
		t.Fatalf("accept: %v", err)
	}
	got, err := s.SubmissionFiles(ctx, sub.ID)
	if err != nil {
		t.Fatalf("submission files: %v", err)
	}
	if len(got) != len(sub.Files) {
		t.Fatalf("got %d files, want %d", len(got), len(sub.Files))
	}
	for i, want := range sub.Files {
		want.Content = nil
		if got[i] != want {
			t.Errorf("file %d:\n got %+v\nwant %+v", i, got[i], want)
		}
		one, err := s.GetFile(ctx, want.ID)
		if err != nil || *one != want {
			t.Errorf("get file %d = %+v, %v; want %+v", i, one, err, want)
		}
	}
	if c := storedContent(t, s, sub.Files[0].ID); !bytes.Equal(c, big) {
		t.Errorf("cv content: %d bytes back, want the %d posted", len(c), len(big))
	}
	if c := storedContent(t, s, sub.Files[1].ID); string(c) != "\x89PNG\r\n\x1a\nsmall" {
		t.Errorf("photo content = %q", c)
	}
	if c := storedContent(t, s, sub.Files[3].ID); len(c) != 0 {
		t.Errorf("metadata-only file has %d bytes of content, want none", len(c))
	}

	// A second Accept of the same submission is a duplicate and writes no file twice.
	res, err := outbox.AcceptOne(ctx, s, sub, nil)
	if err != nil || !res.Duplicate {
		t.Fatalf("accept again = %+v, %v; want a duplicate", res, err)
	}
	if again, _ := s.SubmissionFiles(ctx, sub.ID); len(again) != len(sub.Files) {
		t.Errorf("files after a duplicate accept = %d, want %d", len(again), len(sub.Files))
	}

	// Erasure takes the files with the submission.
	if err := s.Act(ctx, outbox.Action{Kind: outbox.ActionErase, SubmissionID: sub.ID, User: "ops", Now: sub.CreatedAt}); err != nil {
		t.Fatalf("erase: %v", err)
	}
	checkNoFiles(t, s, sub)
})

// A rolled-back submission has no files, whether the commit failed after every row was
// written or a file's content came up short; and a good batch member beside a failing one
// keeps its files.
var _ = register("AcceptRolledBackLeavesNoFiles", func(t *testing.T, s outbox.Store) {
	ctx := testCtx(t)
	sub := NewSubmission("apply")
	sub.Files = []outbox.File{NewFile(sub, "cv", "cv.pdf", pattern(outbox.FileChunkSize+1))}
	fctx := outbox.WithBeforeCommit(ctx, func() error { return errForced })
	out := s.AcceptBatch(fctx, []outbox.AcceptItem{{Submission: sub}})
	if out[0].Err == nil {
		t.Fatal("accept with a failing commit succeeded")
	}
	if _, err := s.GetSubmission(ctx, sub.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("submission after the rollback: err = %v, want ErrNotFound", err)
	}
	checkNoFiles(t, s, sub)

	// Content shorter than the recorded size (a temporary file cut short) fails the accept.
	short := NewSubmission("apply")
	f := NewFile(short, "cv", "cv.pdf", pattern(1000))
	f.Content = outbox.BytesContent(pattern(999))
	short.Files = []outbox.File{f}
	ok := NewSubmission("apply")
	ok.Files = []outbox.File{NewFile(ok, "cv", "ok.pdf", []byte("%PDF-1.7 fine"))}
	out = s.AcceptBatch(ctx, []outbox.AcceptItem{{Submission: short}, {Submission: ok}})
	if out[0].Err == nil {
		t.Error("accept of a file whose content is short succeeded")
	}
	if _, err := s.GetSubmission(ctx, short.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("submission with the short file: err = %v, want ErrNotFound", err)
	}
	checkNoFiles(t, s, short)
	if out[1].Err != nil {
		t.Fatalf("the good member of the batch: %v", out[1].Err)
	}
	if c := storedContent(t, s, ok.Files[0].ID); string(c) != "%PDF-1.7 fine" {
		t.Errorf("good member's file = %q", c)
	}
})
