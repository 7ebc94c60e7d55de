// Package headertest holds the header values the API providers' tests (providers/ses,
// providers/resend) send, and what each provider must be asked to put in the headers
// it builds, so every provider is held to the same rules (providers/headers.go).
package headertest

import (
	"context"
	"fmt"
	"mime"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Case is one message's visitor-controlled header values and what must reach the API.
type Case struct {
	Name    string
	Subject string
	ReplyTo string
	// WantSubject is the Subject a client shows after decoding RFC 2047 words once.
	WantSubject string
	// WantReplyTo is the Reply-To address sent, "" for none.
	WantReplyTo string
}

// Cases: visitor text that looks like an encoded word of a line break must stay
// literal (a provider copies ASCII text as it is, and a client would decode it), bidi
// controls are removed, a non-ASCII domain goes in IDNA form and an address with a
// non-ASCII local part stays out of Reply-To.
var Cases = []Case{
	{Name: "b word and IDNA domain",
		Subject: "\u202eHi =?utf-8?b?DQpCY2M6IGV2aWxAeC50ZXN0?=\u202c", WantSubject: "Hi =?utf-8?b?DQpCY2M6IGV2aWxAeC50ZXN0?=",
		ReplyTo: "bob@bücher.test", WantReplyTo: "bob@xn--bcher-kva.test"},
	{Name: "q word and non-ASCII local part",
		Subject: "\u2066Grüße =?utf-8?q?=0D=0ABcc:_evil@x.test?=\u2069", WantSubject: "Grüße =?utf-8?q?=0D=0ABcc:_evil@x.test?=",
		ReplyTo: "böb@x.test", WantReplyTo: ""},
	{Name: "plain",
		Subject: "New enquiry from Zoë", WantSubject: "New enquiry from Zoë",
		ReplyTo: "visitor@example.org", WantReplyTo: "visitor@example.org"},
}

// Check fails t unless the subject and Reply-To an API was sent for c are what c wants.
func Check(t *testing.T, c Case, subject, replyTo string) {
	t.Helper()
	if got, err := new(mime.WordDecoder).DecodeHeader(subject); err != nil || got != c.WantSubject {
		t.Errorf("%s: Subject %q decodes to %q (%v), want %q", c.Name, subject, got, err, c.WantSubject)
	}
	if replyTo != c.WantReplyTo {
		t.Errorf("%s: Reply-To %q, want %q", c.Name, replyTo, c.WantReplyTo)
	}
}

// SendAll sends base once per case, with the case's Subject and Reply-To and an id of
// its own, and fails t at the first error.
func SendAll(t *testing.T, p providers.Provider, base providers.Message) {
	t.Helper()
	for i, c := range Cases {
		m := base
		m.ID, m.Subject, m.ReplyTo = fmt.Sprintf("%s-%d", base.ID, i), c.Subject, c.ReplyTo
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("%s: send: %v", c.Name, err)
		}
	}
}
