// Package smtp sends email through an SMTP relay (a mail provider's submission port, a
// company relay, a local MTA), one message per connection, with net/smtp from the
// standard library. The message is the one the file provider writes
// (providers/internal/mimemsg): the configured From, the visitor only in Reply-To, an
// RFC 2047 Subject, multipart/alternative text + HTML, and a Message-ID derived from the
// delivery id (<id@from-domain>), the same on every retry, so a receiver can drop the
// copy a retry after an ambiguous send makes. SMTP has no idempotency key: that
// Message-ID is the only de-duplication there is.
//
// Transport security (Config.TLS): "starttls" (default) upgrades the connection and
// refuses to send when the server does not offer STARTTLS; "implicit" speaks TLS from
// the first byte (port 465); "none" is plain text and allowed only to a loopback
// address (a local MTA). AUTH PLAIN is used when a username is set, never over an
// unencrypted connection to anything but loopback.
//
// Classification of a failed send (each stage is one SMTP command):
//
//	stage                                     answer / failure         class      failover
//	connect, greeting, EHLO, STARTTLS, TLS    refused, DNS, handshake  Temporary  yes
//	  (no STARTTLS offered in starttls mode)  any 4xx or 5xx reply
//	AUTH                                      4xx                      Temporary  yes
//	AUTH                                      5xx (535 ...)            Permanent  yes (a destination failure: parks)
//	MAIL FROM                                 4xx or 5xx               Temporary  yes
//	RCPT TO                                   4xx                      Temporary  yes
//	RCPT TO                                   5xx (550 no such user)   Permanent  no
//	RCPT TO                                   530, or 5xx about relay  Temporary  yes
//	DATA command, body before the final "."   4xx / broken connection  Temporary  yes
//	DATA command                              5xx                      Permanent  no
//	final "." written, no reply (timeout,     -                        Ambiguous  no
//	  reset)
//	reply to the final "."                    4xx                      Temporary  yes
//	reply to the final "."                    5xx (554 rejected)       Permanent  no
//	caller's context cancelled (shutdown)     -                        Temporary  no
//
// A 5xx on AUTH or MAIL FROM is about this relay's setup (wrong password, a From the
// account may not use), the same for every message, and another provider may take the
// message. MAIL FROM stays Temporary. A 5xx on AUTH is Permanent with Destination set:
// the outbox parks the relay account (docs/operations.md, "Parked destinations") rather
// than killing every delivery, and releases them all when a probe gets through. A 5xx on RCPT is about the recipient and another provider would get the
// same answer, except 530 (authentication required) and relay refusals, which again
// mean this relay's setup. Error codes read "<stage>_<reply code>" (e.g. "rcpt_550"),
// or "network", "timeout", "tls", "no_starttls", "no_auth".
//
// Errors never carry the password (it is scrubbed from server replies too) or the
// message body.
package smtp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
)

// DefaultTimeout bounds one send, from dialling to the reply to the final ".".
const DefaultTimeout = 30 * time.Second

// TLS modes.
const (
	StartTLS = "starttls"
	Implicit = "implicit"
	NoTLS    = "none"
)

// Config configures the SMTP provider.
type Config struct {
	// Address is the relay's host:port, e.g. smtp.example.com:587.
	Address string
	// Username and Password, when set, authenticate with AUTH PLAIN. The password is a
	// secret: never logged, never part of an error.
	Username string
	Password string
	// TLS is StartTLS (default), Implicit or NoTLS (loopback addresses only).
	TLS string
	// ServerName is the name the certificate is checked against; default Address's host.
	ServerName string
	// RootCAs verifies the server's certificate; default the system pool.
	RootCAs *x509.CertPool
	// Timeout bounds one send; default DefaultTimeout.
	Timeout time.Duration
	// From is the sender: the From header and the envelope sender (MAIL FROM).
	From string
	// HELO is the name sent with EHLO; default the host name.
	HELO string
	// Now stamps the Date header; default time.Now.
	Now func() time.Time
}

// Provider sends email over SMTP.
type Provider struct {
	addr, host string
	user, pass string
	mode       string
	tls        *tls.Config
	timeout    time.Duration
	from       *mail.Address
	helo       string
	now        func() time.Time
	loopback   bool
}

// New checks cfg; it opens no connection.
func New(cfg Config) (*Provider, error) {
	host, port, err := net.SplitHostPort(cfg.Address)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("smtp: address %q is not host:port", cfg.Address)
	}
	from, err := mimemsg.ParseFrom(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("smtp: from %q is not an email address: %w", cfg.From, err)
	}
	p := &Provider{addr: cfg.Address, host: host, user: cfg.Username, pass: cfg.Password, mode: cfg.TLS,
		timeout: cfg.Timeout, from: from, helo: cfg.HELO, now: cfg.Now, loopback: IsLoopback(host)}
	switch p.mode {
	case "":
		p.mode = StartTLS
	case StartTLS, Implicit:
	case NoTLS:
		if !p.loopback {
			return nil, fmt.Errorf("smtp: tls none sends in plain text and is only allowed to a loopback address, not %q", host)
		}
	default:
		return nil, fmt.Errorf("smtp: unknown tls mode %q (want starttls, implicit or none)", cfg.TLS)
	}
	if (p.user == "") != (p.pass == "") {
		return nil, errors.New("smtp: username and password go together (is the password's placeholder empty?)")
	}
	if strings.ContainsAny(p.user+p.pass, "\x00") {
		return nil, errors.New("smtp: username or password contains a NUL byte")
	}
	if p.helo == "" {
		p.helo, _ = os.Hostname()
		if p.helo == "" || strings.ContainsAny(p.helo, " \r\n") {
			p.helo = "localhost"
		}
	}
	if strings.ContainsAny(p.helo, " \r\n\x00") {
		return nil, fmt.Errorf("smtp: helo %q is not a host name", p.helo)
	}
	name := cfg.ServerName
	if name == "" {
		name = host
	}
	p.tls = &tls.Config{ServerName: name, RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// IsLoopback reports whether host is "localhost" or a loopback IP address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "smtp" }

// stage names the SMTP step a failure happened in.
type stage string

const (
	stConnect  stage = "connect"
	stEHLO     stage = "ehlo"
	stSTARTTLS stage = "starttls"
	stAUTH     stage = "auth"
	stMAIL     stage = "mail"
	stRCPT     stage = "rcpt"
	stDATA     stage = "data"
	stDataEnd  stage = "data_end"
)

// Send implements providers.Provider: one connection, one message, QUIT.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	if perr := providers.CheckHeaders(m); perr != nil {
		return res, perr
	}
	if m.Channel != "" && m.Channel != "email" {
		return res, &providers.Error{Class: providers.Permanent, Code: "wrong_channel", Err: fmt.Errorf("the smtp provider sends email, not %s", m.Channel)}
	}
	if m.ID == "" || strings.ContainsAny(m.ID, "<>@ \t\r\n\x00") {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_id", Err: fmt.Errorf("message id %q cannot make a Message-ID", m.ID)}
	}
	built, err := mimemsg.Build(p.from, m, p.now())
	if err != nil {
		return res, &providers.Error{Class: providers.Permanent, Code: "bad_message", Err: err}
	}
	res.MessageID = built.MessageID
	if err := ctx.Err(); err != nil {
		return res, &providers.Error{Class: providers.Temporary, Code: "cancelled", Err: err}
	}
	if err := p.send(ctx, built); err != nil {
		return res, err
	}
	return res, nil
}

func (p *Provider) send(ctx context.Context, built *mimemsg.Built) *providers.Error {
	cl, conn, done, perr := p.session(ctx)
	if perr != nil {
		return perr
	}
	defer done()
	if err := cl.Mail(p.from.Address); err != nil {
		return p.classify(ctx, stMAIL, err, false)
	}
	for _, to := range built.To {
		if err := cl.Rcpt(to.Address); err != nil {
			return p.classify(ctx, stRCPT, err, false)
		}
	}
	w, err := cl.Data()
	if err != nil {
		return p.classify(ctx, stDATA, err, false)
	}
	if _, err := w.Write(built.Raw); err != nil {
		return p.classify(ctx, stDATA, err, false)
	}
	// Close writes the final "." and reads the reply. Once the "." has left, the server
	// may have taken the message even if its reply never comes.
	if err := w.Close(); err != nil {
		return p.classify(ctx, stDataEnd, err, !conn.writeFailed.Load())
	}
	cl.Quit() // the message is accepted; a failed QUIT changes nothing
	return nil
}

// session connects and greets the relay, with TLS and AUTH as configured, up to the
// point where a message would start (MAIL FROM): what send and Probe share. done
// closes the connection and stops watching ctx.
func (p *Provider) session(ctx context.Context) (*smtp.Client, *trackConn, func(), *providers.Error) {
	deadline := time.Now().Add(p.timeout)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	raw, err := (&net.Dialer{}).DialContext(dctx, "tcp", p.addr)
	if err != nil {
		cancel()
		return nil, nil, nil, p.classify(ctx, stConnect, err, false)
	}
	conn := &trackConn{Conn: raw}
	// One deadline for the whole conversation, and the caller's cancellation breaks any
	// read or write at once.
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	done := func() { stop(); conn.Close(); cancel() }
	fail := func(perr *providers.Error) (*smtp.Client, *trackConn, func(), *providers.Error) {
		done()
		return nil, nil, nil, perr
	}

	var c net.Conn = conn
	if p.mode == Implicit {
		tc := tls.Client(conn, p.tls)
		if err := tc.HandshakeContext(dctx); err != nil {
			return fail(p.tlsError(ctx, stConnect, err))
		}
		c = tc
	}
	cl, err := smtp.NewClient(c, p.host)
	if err != nil {
		return fail(p.classify(ctx, stConnect, err, false))
	}
	if err := cl.Hello(p.helo); err != nil {
		return fail(p.classify(ctx, stEHLO, err, false))
	}
	if ok, _ := cl.Extension("STARTTLS"); p.mode == StartTLS {
		if !ok {
			return fail(&providers.Error{Class: providers.Temporary, Failover: true, Code: "no_starttls",
				Err: fmt.Errorf("smtp: %s does not offer STARTTLS; refusing to send in plain text (tls starttls)", p.addr)})
		}
		if err := cl.StartTLS(p.tls); err != nil {
			return fail(p.tlsError(ctx, stSTARTTLS, err))
		}
	}
	if p.user != "" {
		if ok, _ := cl.Extension("AUTH"); !ok {
			return fail(&providers.Error{Class: providers.Temporary, Failover: true, Code: "no_auth",
				Err: fmt.Errorf("smtp: %s does not offer AUTH, but a username is configured", p.addr)})
		}
		if err := cl.Auth(&plainAuth{user: p.user, pass: p.pass, plainOK: p.loopback}); err != nil {
			return fail(p.classify(ctx, stAUTH, err, false))
		}
	}
	return cl, conn, done, nil
}

// classify maps a failure at stage st to the outbox's classes (the package doc's table).
// dotSent says the final "." of DATA was written.
func (p *Provider) classify(ctx context.Context, st stage, err error, dotSent bool) *providers.Error {
	err = p.scrub(err)
	wrapped := fmt.Errorf("smtp %s: %w", strings.ReplaceAll(string(st), "_", " "), err)
	var te *textproto.Error
	if !errors.As(err, &te) {
		return providers.NetworkError(ctx, st == stDataEnd && dotSent, wrapped)
	}
	perr := &providers.Error{Code: fmt.Sprintf("%s_%d", st, te.Code), Err: wrapped}
	switch {
	case te.Code >= 400 && te.Code < 500:
		perr.Class, perr.Failover = providers.Temporary, true
	case st == stRCPT && (te.Code == 530 || strings.Contains(strings.ToLower(te.Msg), "relay")):
		perr.Class, perr.Failover = providers.Temporary, true
	case st == stRCPT || st == stDATA || st == stDataEnd:
		perr.Class = providers.Permanent
	case st == stAUTH:
		// Wrong credentials: the relay account's failure for every message, so the
		// destination is parked rather than each lead retried to dead.
		perr.Class, perr.Destination, perr.Failover = providers.Permanent, true, true
	default: // connect, EHLO, STARTTLS, AUTH, MAIL: this relay or its setup
		perr.Class, perr.Failover = providers.Temporary, true
	}
	return perr
}

// tlsError classifies a failed TLS handshake: like any failure before MAIL, but coded
// "tls" unless it was a timeout or a reply.
func (p *Provider) tlsError(ctx context.Context, st stage, err error) *providers.Error {
	perr := p.classify(ctx, st, err, false)
	if perr.Code == "network" {
		perr.Code = "tls"
	}
	return perr
}

// scrub removes the password, and the AUTH PLAIN string that carries it, from err's
// text: a server may echo what it was sent.
func (p *Provider) scrub(err error) error {
	if p.pass == "" {
		return err
	}
	msg := err.Error()
	secrets := []string{p.pass, base64.StdEncoding.EncodeToString([]byte("\x00" + p.user + "\x00" + p.pass))}
	dirty := false
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			msg, dirty = strings.ReplaceAll(msg, s, "[redacted]"), true
		}
	}
	if !dirty {
		return err
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		return &textproto.Error{Code: te.Code, Msg: strings.TrimPrefix(msg, fmt.Sprintf("%03d ", te.Code))}
	}
	return errors.New(msg)
}

// plainAuth is AUTH PLAIN (RFC 4616) that, unlike smtp.PlainAuth, follows this
// provider's loopback rule rather than net/smtp's short list of names.
type plainAuth struct {
	user, pass string
	plainOK    bool // the server is on loopback: no TLS needed
}

func (a *plainAuth) Start(si *smtp.ServerInfo) (string, []byte, error) {
	if !si.TLS && !a.plainOK {
		return "", nil, errors.New("refusing to send the password over an unencrypted connection")
	}
	return "PLAIN", []byte("\x00" + a.user + "\x00" + a.pass), nil
}

func (a *plainAuth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return nil, errors.New("unexpected challenge after AUTH PLAIN")
	}
	return nil, nil
}

// trackConn remembers whether a write failed: after DATA's final ".", a failed write
// means the "." never left (nothing was delivered), a failed read that it did and the
// outcome is unknown.
type trackConn struct {
	net.Conn
	writeFailed atomic.Bool
}

func (c *trackConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.writeFailed.Store(true)
	}
	return n, err
}

var _ providers.Provider = (*Provider)(nil)
