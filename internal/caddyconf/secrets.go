package caddyconf

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Literal secrets. A Caddyfile is adapted to a JSON config, and Caddy logs that whole
// config at DEBUG ("adjusted config"), `caddy adapt` prints it and the admin API serves
// it: a secret written literally in the Caddyfile is in all three. A placeholder
// ({env.X}, {file./path}) stays a placeholder in the JSON and is resolved only when the
// module provisions, in memory. ({$X} is no help: the Caddyfile reader expands it, so the
// JSON holds the value.) WarnLiteralSecrets tells the operator at load.

// secretOptions are the block options, first on their line, whose first argument is a
// secret, by the block they are written in ("" for any): the option is named to the
// operator as block and option ("notify webhook secret").
var secretOptions = map[string]string{
	"secret_access_key": "ses",      // email ses { secret_access_key KEY }
	"api_key":           "resend",   // email resend { api_key KEY }
	"password":          "smtp",     // email smtp HOST { password PASSWORD }
	"token":             "telegram", // notify telegram CHAT { token TOKEN }
	"secret":            "",         // notify webhook URL { secret }, feedback resend { secret }
}

// captchas are the form options whose first argument is the verifier's secret.
var captchas = map[string]bool{"turnstile": true, "hcaptcha": true, "recaptcha": true}

// chatURLChannels are the chat channels whose `notify CHANNEL URL` URL is the credential.
var chatURLChannels = map[string]bool{"slack": true, "discord": true, "teams": true}

// ChatURLIsCredential reports whether ch's route URL is its credential, so that it may be
// a placeholder ({env.SLACK_URL}), resolved when the handler provisions.
func ChatURLIsCredential(ch outbox.Channel) bool { return chatURLChannels[string(ch)] }

// hasPlaceholder reports whether s holds a placeholder, left to resolve at provision.
func hasPlaceholder(s string) bool { return placeholder.MatchString(s) }

// credentialHeader matches the names of webhook headers that carry a credential.
var credentialHeader = regexp.MustCompile(`(?i)auth|token|key|secret|signature|cookie|password`)

// placeholder matches a Caddy placeholder such as {env.X} or {file./run/secrets/x}.
var placeholder = regexp.MustCompile(`\{[^{}\s]+\}`)

// WarnLiteralSecrets logs a warning for every secret written literally (not through a
// placeholder) in the Caddyfile tokens of d, naming the option and its file:line, never
// the value. It reads d from its start and leaves it there; call it after parsing.
func WarnLiteralSecrets(d *caddyfile.Dispenser, logger *zap.Logger) {
	var toks []caddyfile.Token
	d.Reset()
	for d.Next() {
		toks = append(toks, d.Token())
	}
	d.Reset()
	var blocks []string // the heading of each open block, innermost last
	for i, t := range toks {
		switch t.Text {
		case "{":
			blocks = append(blocks, lineHeading(toks, i))
			continue
		case "}":
			if len(blocks) > 0 {
				blocks = blocks[:len(blocks)-1]
			}
			continue
		}
		if i > 0 && sameLine(toks[i-1], t) {
			continue // options are first on their line
		}
		block := ""
		if len(blocks) > 0 {
			block = blocks[len(blocks)-1]
		}
		if option, value, ok := secretAt(toks, i, block); ok && !hasPlaceholder(value) {
			logger.Warn("a secret is written literally in the Caddyfile: Caddy logs the whole config at DEBUG "+
				"(\"adjusted config\") and `caddy adapt` prints it; write a placeholder instead, "+
				"{env.NAME} (an environment variable) or {file./path} (a file's content)",
				zap.String("option", option), zap.String("file", t.File), zap.Int("line", t.Line))
		}
	}
}

// secretAt reports the secret option that starts at toks[i], written in block, and its
// value.
func secretAt(toks []caddyfile.Token, i int, block string) (option, value string, ok bool) {
	arg := func(n int) (string, bool) {
		if i+n < len(toks) && sameLine(toks[i], toks[i+n]) && toks[i+n].Text != "{" {
			return toks[i+n].Text, true
		}
		return "", false
	}
	name := toks[i].Text
	switch {
	case name == "notify":
		ch, _ := arg(1)
		if u, has := arg(2); has && chatURLChannels[ch] {
			return "notify " + ch, u, true
		}
	case name == "storage":
		if kind, _ := arg(1); kind == "postgres" {
			if dsn, has := arg(2); has && dsnHasPassword(dsn) {
				return "storage postgres", dsn, true
			}
		}
	case captchas[name]:
		if v, has := arg(1); has {
			return name, v, true
		}
	case name == "header" && block == "notify webhook":
		h, _ := arg(1)
		if v, has := arg(2); has && credentialHeader.MatchString(h) {
			return block + " header " + h, v, true
		}
	default:
		want, known := secretOptions[name]
		if !known || (want != "" && !strings.HasSuffix(block, want)) {
			return "", "", false
		}
		if v, has := arg(1); has {
			return strings.TrimSpace(block + " " + name), v, true // block "" only for a stray option
		}
	}
	return "", "", false
}

// lineHeading names the block opened by the "{" at toks[i]: the first token of its line,
// with the channel for `notify CHANNEL` ("notify webhook").
func lineHeading(toks []caddyfile.Token, i int) string {
	first := i
	for first > 0 && sameLine(toks[first-1], toks[i]) {
		first--
	}
	if first == i {
		return ""
	}
	if toks[first].Text == "notify" && first+1 < i {
		return "notify " + toks[first+1].Text
	}
	return toks[first].Text
}

func sameLine(a, b caddyfile.Token) bool { return a.File == b.File && a.Line == b.Line }

// dsnHasPassword reports whether a PostgreSQL DSN (URL or key=value form) holds a
// password.
func dsnHasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		_, has := u.User.Password()
		return has || u.Query().Has("password")
	}
	for _, kv := range strings.Fields(dsn) {
		if strings.HasPrefix(kv, "password=") {
			return true
		}
	}
	return false
}
