// Package mimemsg builds the RFC 5322 message the file and SMTP providers hand over:
// the configured From, the visitor only in Reply-To, an RFC 2047 encoded Subject, a
// Message-ID derived from the delivery id, and a multipart/alternative body with a
// quoted-printable plain-text part always and an HTML part when given; with attachments
// that body is the first part of a multipart/mixed message, each file a base64 part. The output is
// 7-bit clean with CRLF line ends, ready for an .eml file or SMTP DATA.
package mimemsg

import (
	"bytes"
	"encoding/base64"
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
	alt := mw
	var mixed *multipart.Writer
	if len(m.Attachments) > 0 {
		// multipart/mixed: the alternative text and HTML first, then each file.
		mixed = mw
		header("Content-Type", "multipart/mixed;\r\n boundary=\""+mixed.Boundary()+"\"")
		var err error
		if alt, err = nestedAlternative(mixed); err != nil {
			return nil, err
		}
	} else {
		// Folded: with its 60-character boundary the field would pass 78 characters.
		header("Content-Type", "multipart/alternative;\r\n boundary=\""+mw.Boundary()+"\"")
	}
	b.WriteString("\r\n")
	if err := writePart(alt, "text/plain; charset=utf-8", m.Text); err != nil {
		return nil, err
	}
	if m.HTML != "" {
		if err := writePart(alt, "text/html; charset=utf-8", m.HTML); err != nil {
			return nil, err
		}
	}
	if err := alt.Close(); err != nil {
		return nil, err
	}
	if mixed != nil {
		for _, a := range m.Attachments {
			if err := writeAttachment(mixed, a); err != nil {
				return nil, err
			}
		}
		if err := mixed.Close(); err != nil {
			return nil, err
		}
	}
	b.Write(body.Bytes())
	return &Built{Raw: b.Bytes(), MessageID: msgID, To: to}, nil
}

// nestedAlternative opens a multipart/alternative part inside mixed for the bodies.
func nestedAlternative(mixed *multipart.Writer) (*multipart.Writer, error) {
	boundary := multipart.NewWriter(io.Discard).Boundary() // a fresh random one
	w, err := mixed.CreatePart(textproto.MIMEHeader{
		"Content-Type": {"multipart/alternative;\r\n boundary=\"" + boundary + "\""},
	})
	if err != nil {
		return nil, err
	}
	alt := multipart.NewWriter(w)
	if err := alt.SetBoundary(boundary); err != nil {
		return nil, err
	}
	return alt, nil
}

// writeAttachment writes one file as a base64 attachment part, its name encoded as a
// header parameter (RFC 2231 for non-ASCII) and its lines at 76 characters.
func writeAttachment(mixed *multipart.Writer, a providers.Attachment) error {
	ct := a.ContentType
	if _, _, err := mime.ParseMediaType(ct); err != nil || ct == "" {
		ct = "application/octet-stream"
	}
	w, err := mixed.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {ct},
		"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": a.Name})},
		"Content-Transfer-Encoding": {"base64"},
	})
	if err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(a.Content)
	for len(enc) > 76 {
		if _, err := io.WriteString(w, enc[:76]+"\r\n"); err != nil {
			return err
		}
		enc = enc[76:]
	}
	_, err = io.WriteString(w, enc+"\r\n")
	return err
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

// ReadMixed reads back a message Build made with attachments: the text and HTML of its
// first part, then every attached file with its name and type (the tests of the
// providers that send attachments use it).
func ReadMixed(msg *mail.Message) (text, html string, files []providers.Attachment, err error) {
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		return "", "", nil, fmt.Errorf("content type %q is not multipart/mixed (%v)", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	first, err := mr.NextPart()
	if err != nil {
		return "", "", nil, fmt.Errorf("first part: %w", err)
	}
	text, html, err = ReadAlternative(&mail.Message{Header: mail.Header(first.Header), Body: first})
	if err != nil {
		return "", "", nil, err
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return text, html, files, nil
		}
		if err != nil {
			return "", "", nil, fmt.Errorf("next part: %w", err)
		}
		disp, dp, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		if err != nil || disp != "attachment" || part.Header.Get("Content-Transfer-Encoding") != "base64" {
			return "", "", nil, fmt.Errorf("part %q is not a base64 attachment", part.Header.Get("Content-Disposition"))
		}
		b, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, part))
		if err != nil {
			return "", "", nil, fmt.Errorf("attachment %q: %w", dp["filename"], err)
		}
		files = append(files, providers.Attachment{Name: dp["filename"], ContentType: part.Header.Get("Content-Type"), Content: b})
	}
}
