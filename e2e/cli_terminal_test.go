package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// hostileName and hostileMessage are what a visitor can type into a form: a stored
// OSC sequence retitles the operator's terminal window when printed raw (ESC ] ... BEL),
// and U+009B is CSI in one character on terminals that honour 8-bit controls.
const (
	hostileName    = "\x1b]0;pwned\x07Ada"
	hostileMessage = "\u009b31mred"
)

// assertNoControls fails the test if out holds a character a terminal could act on:
// a C0 control other than LF and TAB, DEL or a C1 control.
func assertNoControls(t *testing.T, what, out string) {
	t.Helper()
	if i := strings.IndexFunc(out, func(r rune) bool {
		return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
	}); i >= 0 {
		t.Errorf("%s printed a raw control character at byte %d:\n%q", what, i, out)
	}
}

// Nothing a visitor typed reaches the operator's terminal as a control character:
// `show` and `list --json` print escapes in its place, JSON that stays JSON with the
// same values, while an export into a pipe or file stays the exact data.
func TestCLIEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	hook := newSwitchable(t, http.StatusOK)
	p := newCaddy(t, caddyOpts{Caddyfile: adminConfig("sqlite {{DIR}}/forms.db", hook.srv.URL)})
	id := postWithHeaders(t, p, "/contact", url.Values{"name": {hostileName}, "message": {hostileMessage}},
		map[string]string{"User-Agent": "agent \u009d0;title\u009c"})

	out := p.cli(t, true, "show", id)
	assertNoControls(t, "show", out)
	for _, want := range []string{`\u001b]0;pwned\u0007Ada`, `\u009b31mred`} {
		if !strings.Contains(out, want) {
			t.Errorf("show does not print %q visibly:\n%s", want, out)
		}
	}

	var shown submissionJSON
	var listed struct{ Items []submissionJSON }
	for args, v := range map[string]any{"show " + id + " --json": &shown, "list --json --form contact": &listed} {
		out := p.cli(t, true, strings.Fields(args)...)
		assertNoControls(t, args, out)
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("%s printed JSON that does not parse: %v\n%s", args, err, out)
		}
	}
	if len(listed.Items) != 1 {
		t.Fatalf("list --json: %d items, want 1", len(listed.Items))
	}
	for what, s := range map[string]submissionJSON{"show --json": shown, "list --json": listed.Items[0]} {
		if s.Data["name"] != hostileName || s.Data["message"] != hostileMessage {
			t.Errorf("%s: the JSON's values are %q, want the stored ones", what, s.Data)
		}
	}

	// Into a pipe the export is data, byte for byte what the API sent.
	_, api := p.admin(t, http.MethodGet, "/form_outbox/export?form=contact")
	if out := p.cli(t, true, "export", "--form", "contact"); out != api {
		t.Errorf("cli export into a pipe\n%q\nwant the API's\n%q", out, api)
	}
}
