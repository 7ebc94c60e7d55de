// Package file is the development email provider: instead of sending, it writes each
// email as an RFC 5322 .eml file into a folder, where any mail client can open it. It is
// the embedded example's default, so a form works end to end with no account anywhere.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Config configures the file provider.
type Config struct {
	// Dir receives the .eml files; created on first send.
	Dir string
	// From is the sender, e.g. "Example Forms <forms@example.com>".
	From string
	// Now stamps the Date header; default time.Now.
	Now func() time.Time
}

// Provider writes emails to Config.Dir as <delivery id>.eml.
type Provider struct {
	dir  string
	from *mail.Address
	now  func() time.Time
}

// New checks cfg and returns the provider. It touches no file: Caddy provisions modules
// for `caddy validate` too.
func New(cfg Config) (*Provider, error) {
	if cfg.Dir == "" {
		return nil, errors.New("file email provider: a folder is required")
	}
	if hasCRLF(cfg.From) {
		return nil, errors.New("file email provider: from contains a line break")
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("file email provider: from %q: %w", cfg.From, err)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Provider{dir: cfg.Dir, from: from, now: now}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "file" }

// Path is where the message with this id is written.
func (p *Provider) Path(id string) string { return filepath.Join(p.dir, id+".eml") }

// Send writes m as <m.ID>.eml. The file is written to a temporary name, synced and
// renamed into place, so a reader never sees half a message and a retry of the same
// delivery replaces its file instead of adding a second one.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	if err := ctx.Err(); err != nil {
		return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Temporary, Err: err}
	}
	if m.ID == "" || strings.ContainsAny(m.ID, `/\`+"\x00") || m.ID == "." || m.ID == ".." {
		return p.permanent("bad_id", fmt.Errorf("message id %q cannot name a file", m.ID))
	}
	if m.Channel != "" && m.Channel != "email" {
		return p.permanent("wrong_channel", fmt.Errorf("the file provider sends email, not %s", m.Channel))
	}
	raw, msgID, err := p.render(m)
	if err != nil {
		return p.permanent("bad_message", err)
	}
	if err := writeAtomic(p.dir, m.ID+".eml", raw); err != nil {
		return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Temporary, Failover: true,
			Err: fmt.Errorf("write .eml: %w", err)}
	}
	return providers.Result{Provider: p.Name(), MessageID: msgID}, nil
}

func (p *Provider) permanent(code string, err error) (providers.Result, error) {
	return providers.Result{Provider: p.Name()}, &providers.Error{Class: providers.Permanent, Code: code, Err: err}
}

// render builds the RFC 5322 message: the configured From, the visitor only in Reply-To,
// a multipart/alternative body with a plain-text part always and an HTML part when given.
func (p *Provider) render(m providers.Message) ([]byte, string, error) {
	for name, v := range map[string]string{"To": m.To, "Reply-To": m.ReplyTo, "Subject": m.Subject} {
		if hasCRLF(v) {
			return nil, "", fmt.Errorf("header %s contains a line break", name)
		}
	}
	if m.To == "" {
		return nil, "", errors.New("no recipient")
	}
	to, err := mail.ParseAddressList(m.To)
	if err != nil {
		return nil, "", fmt.Errorf("header To: %w", err)
	}
	var replyTo []*mail.Address
	if m.ReplyTo != "" {
		if replyTo, err = mail.ParseAddressList(m.ReplyTo); err != nil {
			return nil, "", fmt.Errorf("header Reply-To: %w", err)
		}
	}
	domain := "localhost"
	if at := strings.LastIndexByte(p.from.Address, '@'); at >= 0 {
		domain = p.from.Address[at+1:]
	}
	msgID := "<" + m.ID + "@" + domain + ">"

	var b bytes.Buffer
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", p.from.String())
	header("To", addressList(to))
	if len(replyTo) > 0 {
		header("Reply-To", addressList(replyTo))
	}
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", p.now().Format(time.RFC1123Z))
	header("Message-ID", msgID)
	header("MIME-Version", "1.0")

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	header("Content-Type", `multipart/alternative; boundary="`+mw.Boundary()+`"`)
	b.WriteString("\r\n")
	if err := writePart(mw, "text/plain; charset=utf-8", m.Text); err != nil {
		return nil, "", err
	}
	if m.HTML != "" {
		if err := writePart(mw, "text/html; charset=utf-8", m.HTML); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	b.Write(body.Bytes())
	return b.Bytes(), msgID, nil
}

func writePart(mw *multipart.Writer, contentType, content string) error {
	h := textproto.MIMEHeader{}
	h.Set("Content-Type", contentType)
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	w, err := mw.CreatePart(h)
	if err != nil {
		return fmt.Errorf("mime part: %w", err)
	}
	qp := quotedprintable.NewWriter(w)
	// Quoted-printable keeps lines under 76 characters and any byte safe in transit;
	// normalising line ends first keeps the text part readable in every client.
	if _, err := qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(content, "\r\n", "\n"), "\n", "\r\n"))); err != nil {
		return fmt.Errorf("mime part: %w", err)
	}
	return qp.Close()
}

func addressList(as []*mail.Address) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func hasCRLF(s string) bool { return strings.ContainsAny(s, "\r\n") }

// writeAtomic writes data to dir/name through a synced temporary file and a rename,
// then syncs the folder so the rename itself survives a crash.
func writeAtomic(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o640); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var _ providers.Provider = (*Provider)(nil)
