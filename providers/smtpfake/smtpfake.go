// Package smtpfake is an in-process SMTP server on 127.0.0.1 for tests that drive the
// real SMTP provider (providers/smtp) through every answer a mail server can give. It
// speaks EHLO/HELO, STARTTLS (with a self-signed certificate whose pool CAPool returns),
// AUTH PLAIN, MAIL, RCPT, DATA, RSET, NOOP and QUIT, and records every message whose
// DATA it read in full.
//
// Scripting: At(stage, reply) queues a reply for the next time a session reaches that
// stage (each queued reply is used once, in order); a Reply can carry a code and text,
// Hang (say nothing until the client goes away: "written, no answer") or Drop (close the
// connection). Stages are Connect (the greeting), EHLO, STARTTLS, AUTH, MAIL, RCPT, DATA
// (the DATA command) and DataEnd (the reply to the final ".").
//
//	srv := smtpfake.New(smtpfake.Config{Username: "u", Password: "p"})
//	defer srv.Close()
//	srv.At(smtpfake.RCPT, smtpfake.Reply{Code: 550, Text: "5.1.1 no such user"})
//	... address srv.Addr(), root CAs srv.CAPool() ...
//	srv.Delivered() // the messages answered 250 after DATA
package smtpfake

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// Stage is a point in an SMTP session where a scripted reply can replace the normal one.
type Stage string

const (
	Connect  Stage = "connect"
	EHLO     Stage = "ehlo"
	STARTTLS Stage = "starttls"
	AUTH     Stage = "auth"
	MAIL     Stage = "mail"
	RCPT     Stage = "rcpt"
	DATA     Stage = "data"
	DataEnd  Stage = "data-end"
)

// Reply scripts one answer.
type Reply struct {
	Code int    // e.g. 451; the session goes on after it as a real server's would
	Text string // default "scripted"
	Hang bool   // answer nothing; wait until the client closes the connection
	Drop bool   // close the connection without answering
}

// Config configures the fake. The zero Config advertises STARTTLS and AUTH PLAIN and
// accepts any credentials.
type Config struct {
	// NoSTARTTLS and NoAUTH leave the extension out of the EHLO answer (and refuse it).
	NoSTARTTLS bool
	NoAUTH     bool
	// ImplicitTLS speaks TLS from the first byte (port 465 style); STARTTLS is then not
	// offered.
	ImplicitTLS bool
	// Username and Password, when set, are the only credentials AUTH PLAIN accepts, and
	// MAIL before a successful AUTH is answered 530.
	Username, Password string
}

// Message is one message whose DATA the server read in full.
type Message struct {
	From  string   // the MAIL FROM address
	To    []string // the RCPT TO addresses
	Data  []byte   // the message as sent, dot-unstuffed, CRLF line ends
	TLS   bool     // the session was encrypted when DATA was sent
	Auth  string   // the user that authenticated, "" if none
	Reply int      // the code answered to the final "." (0: hung or dropped)
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	cfg  Config
	ln   net.Listener
	tls  *tls.Config
	pool *x509.CertPool
	der  []byte

	mu       sync.Mutex
	script   map[Stage][]Reply
	received []Message
	rcpts    []string      // every RCPT TO address, accepted or not, in order
	arrived  chan struct{} // closed and replaced each time a message is received
	sessions int
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// New starts a fake on a free 127.0.0.1 port. It panics if it cannot listen.
func New(cfg Config) *Server {
	cert, pool, err := selfSigned()
	if err != nil {
		panic(err)
	}
	s := &Server{
		cfg:     cfg,
		tls:     &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		pool:    pool,
		der:     cert.Certificate[0],
		script:  map[Stage][]Reply{},
		conns:   map[net.Conn]struct{}{},
		arrived: make(chan struct{}),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	if cfg.ImplicitTLS {
		ln = tls.NewListener(ln, s.tls)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.serve()
	return s
}

// WaitReceived waits until the fake holds at least n whole messages (their final "."
// read, whatever it then answers), or timeout; it reports whether they arrived.
func (s *Server) WaitReceived(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, arrived := len(s.received), s.arrived
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-arrived:
		case <-deadline.C:
			return false
		}
	}
}

// Addr is the host:port to configure.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// CAPool trusts the fake's certificate (valid for 127.0.0.1 and localhost).
func (s *Server) CAPool() *x509.CertPool { return s.pool }

// CAPEM is the fake's certificate in PEM, for configs that take a CA file.
func (s *Server) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.der})
}

// At queues r for the next time a session reaches stage.
func (s *Server) At(stage Stage, r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[stage] = append(s.script[stage], r)
}

// Received returns every message whose DATA was read in full, whatever was answered.
func (s *Server) Received() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

// Rcpts returns every address a client named in RCPT TO, in order, whether or not a
// message followed: what a relay would have been asked to deliver to.
func (s *Server) Rcpts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rcpts...)
}

// Delivered returns the messages answered 250 after DATA.
func (s *Server) Delivered() []Message {
	var out []Message
	for _, m := range s.Received() {
		if m.Reply == 250 {
			out = append(out, m)
		}
	}
	return out
}

// Sessions is the number of connections accepted so far.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Close stops listening, closes every open session (hung ones too) and waits for them.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.sessions++
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.session(c)
		}()
	}
}

// scripted pops the reply queued for stage, if any.
func (s *Server) scripted(stage Stage) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.script[stage]
	if len(q) == 0 {
		return Reply{}, false
	}
	s.script[stage] = q[1:]
	return q[0], true
}

type session struct {
	s      *Server
	conn   net.Conn
	tp     *textproto.Conn
	tls    bool
	helo   bool
	auth   string
	from   string
	to     []string
	inMail bool
}

// errEnd ends a session (QUIT, Drop, Hang, a broken connection).
var errEnd = io.EOF

// fault answers a scripted reply for stage if one is queued. handled is true when it
// did (the command's normal handling is then skipped).
func (ss *session) fault(stage Stage) (handled bool, err error) {
	r, ok := ss.s.scripted(stage)
	if !ok {
		return false, nil
	}
	switch {
	case r.Drop:
		return true, errEnd
	case r.Hang:
		io.Copy(io.Discard, ss.conn) // until the client (or Close) ends the connection
		return true, errEnd
	}
	text := r.Text
	if text == "" {
		text = "scripted"
	}
	if err := ss.tp.PrintfLine("%d %s", r.Code, text); err != nil {
		return true, err
	}
	if r.Code == 421 {
		return true, errEnd // 421 closes the channel
	}
	return true, nil
}

func (s *Server) session(c net.Conn) {
	ss := &session{s: s, conn: c, tp: textproto.NewConn(c), tls: s.cfg.ImplicitTLS}
	if handled, _ := ss.fault(Connect); handled {
		return // a scripted greeting (421, 554) ends the session: the client gives up on it
	}
	if ss.tp.PrintfLine("220 127.0.0.1 smtpfake ESMTP") != nil {
		return
	}
	for {
		line, err := ss.tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		if err := ss.command(strings.ToUpper(verb), arg); err != nil {
			return
		}
	}
}

func (ss *session) reply(code int, text string) error { return ss.tp.PrintfLine("%d %s", code, text) }

func (ss *session) command(verb, arg string) error {
	cfg := ss.s.cfg
	switch verb {
	case "EHLO", "HELO":
		if h, err := ss.fault(EHLO); h {
			return err
		}
		ss.helo, ss.inMail, ss.from, ss.to = true, false, "", nil
		if verb == "HELO" {
			return ss.reply(250, "127.0.0.1")
		}
		lines := []string{"127.0.0.1 greets " + arg, "8BITMIME", "SMTPUTF8"}
		if !cfg.NoSTARTTLS && !ss.tls && !cfg.ImplicitTLS {
			lines = append(lines, "STARTTLS")
		}
		if !cfg.NoAUTH {
			lines = append(lines, "AUTH PLAIN")
		}
		for i, l := range lines {
			sep := "-"
			if i == len(lines)-1 {
				sep = " "
			}
			if err := ss.tp.PrintfLine("250%s%s", sep, l); err != nil {
				return err
			}
		}
		return nil
	case "STARTTLS":
		if cfg.NoSTARTTLS || ss.tls || cfg.ImplicitTLS {
			return ss.reply(502, "5.5.1 STARTTLS not available")
		}
		if h, err := ss.fault(STARTTLS); h {
			return err
		}
		if err := ss.reply(220, "2.0.0 ready to start TLS"); err != nil {
			return err
		}
		tc := tls.Server(ss.conn, ss.s.tls)
		if err := tc.Handshake(); err != nil {
			return err
		}
		ss.conn, ss.tp, ss.tls = tc, textproto.NewConn(tc), true
		ss.helo, ss.auth, ss.inMail, ss.from, ss.to = false, "", false, "", nil // RFC 3207: forget everything
		return nil
	case "AUTH":
		if cfg.NoAUTH {
			return ss.reply(502, "5.5.1 AUTH not available")
		}
		if h, err := ss.fault(AUTH); h {
			return err
		}
		mech, ir, _ := strings.Cut(arg, " ")
		if !strings.EqualFold(mech, "PLAIN") {
			return ss.reply(504, "5.5.4 only PLAIN")
		}
		if ir == "" {
			if err := ss.reply(334, ""); err != nil {
				return err
			}
			l, err := ss.tp.ReadLine()
			if err != nil {
				return err
			}
			ir = l
		}
		raw, err := base64.StdEncoding.DecodeString(ir)
		parts := strings.Split(string(raw), "\x00")
		if err != nil || len(parts) != 3 {
			return ss.reply(501, "5.5.2 cannot decode AUTH PLAIN")
		}
		if cfg.Username != "" && (parts[1] != cfg.Username || parts[2] != cfg.Password) {
			return ss.reply(535, "5.7.8 authentication credentials invalid")
		}
		ss.auth = parts[1]
		return ss.reply(235, "2.7.0 authenticated")
	case "MAIL":
		if !ss.helo {
			return ss.reply(503, "5.5.1 EHLO first")
		}
		if cfg.Username != "" && ss.auth == "" {
			return ss.reply(530, "5.7.0 authentication required")
		}
		if h, err := ss.fault(MAIL); h {
			return err
		}
		addr, ok := pathArg(arg, "FROM:")
		if !ok {
			return ss.reply(501, "5.5.4 syntax: MAIL FROM:<address>")
		}
		ss.inMail, ss.from, ss.to = true, addr, nil
		return ss.reply(250, "2.1.0 ok")
	case "RCPT":
		if !ss.inMail {
			return ss.reply(503, "5.5.1 MAIL first")
		}
		if h, err := ss.fault(RCPT); h {
			return err
		}
		addr, ok := pathArg(arg, "TO:")
		if !ok {
			return ss.reply(501, "5.5.4 syntax: RCPT TO:<address>")
		}
		ss.s.mu.Lock()
		ss.s.rcpts = append(ss.s.rcpts, addr)
		ss.s.mu.Unlock()
		ss.to = append(ss.to, addr)
		return ss.reply(250, "2.1.5 ok")
	case "DATA":
		if len(ss.to) == 0 {
			return ss.reply(503, "5.5.1 RCPT first")
		}
		if h, err := ss.fault(DATA); h {
			return err
		}
		if err := ss.reply(354, "end data with <CR><LF>.<CR><LF>"); err != nil {
			return err
		}
		data, err := readData(ss.tp.R)
		if err != nil {
			return err
		}
		m := Message{From: ss.from, To: ss.to, Data: data, TLS: ss.tls, Auth: ss.auth}
		ss.inMail, ss.from, ss.to = false, "", nil
		r, scripted := ss.s.scripted(DataEnd)
		if !scripted {
			r = Reply{Code: 250, Text: "2.0.0 queued"}
		}
		if r.Code != 0 && !r.Hang && !r.Drop {
			m.Reply = r.Code
		}
		ss.s.mu.Lock()
		ss.s.received = append(ss.s.received, m)
		close(ss.s.arrived)
		ss.s.arrived = make(chan struct{})
		ss.s.mu.Unlock()
		switch {
		case r.Drop:
			return errEnd
		case r.Hang:
			io.Copy(io.Discard, ss.conn)
			return errEnd
		}
		if r.Text == "" {
			r.Text = "scripted"
		}
		return ss.reply(r.Code, r.Text)
	case "RSET":
		ss.inMail, ss.from, ss.to = false, "", nil
		return ss.reply(250, "2.0.0 ok")
	case "NOOP":
		return ss.reply(250, "2.0.0 ok")
	case "QUIT":
		ss.reply(221, "2.0.0 bye")
		return errEnd
	default:
		return ss.reply(502, "5.5.2 command not recognised")
	}
}

// readData reads a DATA body up to the "." line, undoing dot-stuffing and keeping the
// CRLF line ends exactly as sent.
func readData(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		if string(line) == ".\r\n" {
			return out, nil
		}
		if len(line) > 1 && line[0] == '.' {
			line = line[1:]
		}
		out = append(out, line...)
	}
}

// pathArg reads "FROM:<a@b> PARAMS" (prefix FROM: or TO:) and returns a@b.
func pathArg(arg, prefix string) (string, bool) {
	if len(arg) < len(prefix) || !strings.EqualFold(arg[:len(prefix)], prefix) {
		return "", false
	}
	rest := strings.TrimSpace(arg[len(prefix):])
	if !strings.HasPrefix(rest, "<") {
		return "", false
	}
	end := strings.IndexByte(rest, '>')
	if end < 0 {
		return "", false
	}
	return rest[1:end], true
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost, and a pool trusting it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "smtpfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("smtpfake: parse certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
