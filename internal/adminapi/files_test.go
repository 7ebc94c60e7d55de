package adminapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// The admin API's submissions, shown and exported, carry their files' metadata and
// never the content; the export loads it for every submission.
func TestSubmissionViewCarriesFileMetadata(t *testing.T) {
	st := storetest.OpenSQLite(t)
	sub := storetest.NewSubmission("apply")
	f := storetest.NewFile(sub, "cv", "cv.pdf", []byte("%PDF-1.4 secret content"))
	f.Rejected = outbox.FileTooLarge
	sub.Files = []outbox.File{f}
	storetest.MustAccept(t, st, sub)

	var seen []Submission
	err := outbox.ExportSubmissions(context.Background(), st, outbox.SubmissionFilter{}, func(s *outbox.Submission) error {
		seen = append(seen, newSubmission(s))
		return nil
	})
	if err != nil || len(seen) != 1 {
		t.Fatalf("export: %d, %v", len(seen), err)
	}
	b, _ := json.Marshal(seen[0])
	want := `"files":[{"id":"` + f.ID.String() + `","field":"cv","name":"cv.pdf","size":23,"type":"application/pdf","declared_type":"application/pdf","sha256":"` + f.SHA256 + `","rejected":"too_large","kept":true}]`
	if !strings.Contains(string(b), want) || strings.Contains(string(b), "secret content") {
		t.Errorf("view %s\nwant it to contain %s and no content", b, want)
	}
}
