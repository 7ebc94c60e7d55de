package intake

import (
	"strings"

	"github.com/formoutbox/caddy-form-outbox/internal/safetext"
	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// shownSubmission is sub as the messages a person reads render it (e-mail subjects and
// bodies, chat messages, autoreplies): field names, values and file names without bidi
// embedding, override and isolate controls (safetext.StripBidi), which would let a
// visitor reorder the operator's text after their value (a name ending in U+202E). The
// chat renderers isolate each value on top (providers/chat/chat.go); the HTML bodies
// put values in <bdi> where the built-in body shows them. What is stored, routed on and
// sent to webhooks (data for a program) stays as the visitor sent it, and the inbox
// shows the controls as marked escapes (inbox/pages.go). Without any control, sub
// itself is returned: no copy on intake's hot path.
func shownSubmission(sub *outbox.Submission) *outbox.Submission {
	if !hasBidi(sub) {
		return sub
	}
	view := *sub
	view.Data = make(outbox.Fields, len(sub.Data))
	for i, f := range sub.Data {
		view.Data[i] = outbox.Field{Name: safetext.StripBidi(f.Name), Value: safetext.StripBidi(f.Value)}
	}
	view.Files = make([]outbox.File, len(sub.Files))
	for i, f := range sub.Files {
		f.Field, f.Name = safetext.StripBidi(f.Field), safetext.StripBidi(f.Name)
		view.Files[i] = f
	}
	return &view
}

func hasBidi(sub *outbox.Submission) bool {
	for _, f := range sub.Data {
		if strings.ContainsFunc(f.Name, safetext.IsBidiControl) || strings.ContainsFunc(f.Value, safetext.IsBidiControl) {
			return true
		}
	}
	for _, f := range sub.Files {
		if strings.ContainsFunc(f.Field, safetext.IsBidiControl) || strings.ContainsFunc(f.Name, safetext.IsBidiControl) {
			return true
		}
	}
	return false
}
