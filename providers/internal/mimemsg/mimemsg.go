// Package mimemsg builds the RFC 5322 message the file and SMTP providers hand over:
// the configured From, the visitor only in Reply-To, an RFC 2047 encoded Subject, a
// Message-ID derived from the delivery id, and a multipart/alternative body with a
// quoted-printable plain-text part always and an HTML part when given. The output is
// 7-bit clean with CRLF line ends, ready for an .eml file or SMTP DATA.
package mimemsg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Built is a rendered message.
type Built struct {
	Raw       []byte
	MessageID string          // "<id@from-domain>"
	To        []*mail.Address // the parsed recipients, for an SMTP envelope
}

// MessageID is the Message-ID of delivery id sent from the address from: the same on
// every retry, so a receiver can drop the copy a retry after an ambiguous send makes.
func MessageID(id string, from *mail.Address) string {
	domain := "localhost"
	if at := strings.LastIndexByte(from.Address, '@'); at >= 0 {
		domain = from.Address[at+1:]
	}
	return "<" + id + "@" + domain + ">"
}

// Build renders m as sent by from (m.From instead when set), dated now. It refuses a line break or NUL in any
// header value (To, Reply-To, Subject) and a missing or unparseable recipient; the
// header values are cleaned, encoded and folded by the rules in providers/headers.go.
func Build(from *mail.Address, m providers.Message, now time.Time) (*Built, error) {
	m, perr := providers.PrepareHeaders(m)
	if perr != nil {
		return nil, perr
	}
	if m.From != "" {
		f, err := ParseFrom(m.From)
		if err != nil {
			return nil, fmt.Errorf("header From: %w", err)
		}
		from = f
	}
	if m.To == "" {
		return nil, errors.New("no recipient")
	}
	to, err := mail.ParseAddressList(m.To)
	if err != nil {
		return nil, fmt.Errorf("header To: %w", err)
	}
	var replyTo []*mail.Address
	if m.ReplyTo != "" {
		if replyTo, err = mail.ParseAddressList(m.ReplyTo); err != nil {
			return nil, fmt.Errorf("header Reply-To: %w", err)
		}
	}
	msgID := MessageID(m.ID, from)

	var b bytes.Buffer
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	b.WriteString(providers.FoldAddresses("From", []*mail.Address{from}))
	b.WriteString(providers.FoldAddresses("To", to))
	if len(replyTo) > 0 {
		b.WriteString(providers.FoldAddresses("Reply-To", replyTo))
	}
	b.WriteString(providers.FoldHeader("Subject", m.Subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", msgID)
	header("MIME-Version", "1.0")

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	// Folded: with its 60-character boundary the field would pass 78 characters.
	header("Content-Type", "multipart/alternative;\r\n boundary=\""+mw.Boundary()+"\"")
	b.WriteString("\r\n")
	if err := writePart(mw, "text/plain; charset=utf-8", m.Text); err != nil {
		return nil, err
	}
	if m.HTML != "" {
		if err := writePart(mw, "text/html; charset=utf-8", m.HTML); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	b.Write(body.Bytes())
	return &Built{Raw: b.Bytes(), MessageID: msgID, To: to}, nil
}

// ParseFrom parses the configured sender: one address, no line break.
func ParseFrom(s string) (*mail.Address, error) {
	if strings.ContainsAny(s, "\r\n\x00") {
		return nil, errors.New("from contains a line break")
	}
	return mail.ParseAddress(s)
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

// ReadAlternative reads back the text and HTML parts of a message Build made, checking
// their content types and order (tests of the providers that send it use it to check
// what arrived). html is "" when the message has no HTML part.
func ReadAlternative(msg *mail.Message) (text, html string, err error) {
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		return "", "", fmt.Errorf("content type %q is not multipart/alternative (%v)", msg.Header.Get("Content-Type"), err)
	}
	// multipart.Reader undoes the quoted-printable transfer encoding.
	mr := multipart.NewReader(msg.Body, params["boundary"])
	want := []string{"text/plain; charset=utf-8", "text/html; charset=utf-8"}
	var bodies []string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", fmt.Errorf("next part: %w", err)
		}
		if len(bodies) == len(want) || part.Header.Get("Content-Type") != want[len(bodies)] {
			return "", "", fmt.Errorf("part %d is %q, want text/plain then text/html", len(bodies)+1, part.Header.Get("Content-Type"))
		}
		b, err := io.ReadAll(part)
		if err != nil {
			return "", "", err
		}
		bodies = append(bodies, string(b))
	}
	if len(bodies) == 0 {
		return "", "", errors.New("no text part")
	}
	bodies = append(bodies, "")
	return bodies[0], bodies[1], nil
}
