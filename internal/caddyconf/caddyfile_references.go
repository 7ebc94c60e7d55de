package caddyconf

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// checkReferences checks, at its line, every field the form's block refers to in the
// Caddyfile itself: `when field NAME` guards and the {field.NAME} of every `subject`
// (a route's or the autoreply's). seg holds the block's tokens only (ParseForm), so a
// line that starts with `when` or `subject` is one of those options. The rule is
// intake's (Config.CheckReference); template files are checked at Provision, where
// they are read, with their own file and line. A form that declares no fields passes
// here: its Provision warns of each reference instead.
func checkReferences(seg *caddyfile.Dispenser, h *intake.Config) error {
	seg.Reset()
	prevLine, prevFile := 0, ""
	for seg.Next() {
		tok := seg.Token()
		first := tok.Line != prevLine || tok.File != prevFile
		prevLine, prevFile = tok.Line, tok.File
		if !first {
			continue
		}
		var option string
		var names []string
		switch tok.Text {
		case "when":
			args := seg.RemainingArgs()
			if len(args) >= 2 && args[0] == "field" {
				option, names = "when", args[1:2]
			}
		case "subject":
			args := seg.RemainingArgs()
			if len(args) == 1 {
				option, names = "subject", intake.SubjectFields(args[0])
			}
		}
		for _, name := range names {
			if err := h.CheckReference(name); err != nil {
				seg.Prev() // back to the line's last token: the error names its line
				return seg.Errf("%s: %v", option, err)
			}
		}
	}
	return nil
}
