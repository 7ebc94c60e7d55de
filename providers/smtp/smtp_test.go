package smtp_test

import (
	"bytes"
	"context"
	"errors"
	"mime"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
	"github.com/formoutbox/caddy-form-outbox/providers/smtp"
	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
)

const (
	user     = "forms@example.com"
	password = "s3cret-Pa55word"
)

var sentAt = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func message(id string) providers.Message {
	return providers.Message{
		ID:      id,
		Channel: "email",
		To:      "sales@example.com",
		ReplyTo: "Zoë Visitor <zoe@visitor.example>",
		Subject: "New enquiry from Zoë",
		Text:    "Name: Zoë\n.a line starting with a dot\nMessage: hello",
		HTML:    "<p>Name: Zo&euml;</p>",
	}
}

// newFake starts a fake that wants the test credentials.
func newFake(t *testing.T, cfg smtpfake.Config) *smtpfake.Server {
	t.Helper()
	if cfg.Username == "" && !cfg.NoAUTH {
		cfg.Username, cfg.Password = user, password
	}
	srv := smtpfake.New(cfg)
	t.Cleanup(srv.Close)
	return srv
}

// newProvider points a provider at srv with the test credentials and trust in its CA.
func newProvider(t *testing.T, srv *smtpfake.Server, edit func(*smtp.Config)) *smtp.Provider {
	t.Helper()
	cfg := smtp.Config{
		Address:  srv.Addr(),
		Username: user,
		Password: password,
		RootCAs:  srv.CAPool(),
		From:     "Example Forms <forms@example.com>",
		HELO:     "forms.example.com",
		Timeout:  5 * time.Second,
		Now:      func() time.Time { return sentAt },
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := smtp.New(cfg)
	if err != nil {
		t.Fatalf("smtp.New: %v", err)
	}
	return p
}

// only returns the one message srv received.
func only(t *testing.T, srv *smtpfake.Server) smtpfake.Message {
	t.Helper()
	got := srv.Received()
	if len(got) != 1 {
		t.Fatalf("the fake received %d messages, want 1", len(got))
	}
	return got[0]
}

// classOf asserts err is a *providers.Error of class c, with failover f and code code,
// and that the password is nowhere in its text.
func classOf(t *testing.T, err error, c providers.Class, f bool, code string) {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *providers.Error", err, err)
	}
	if pe.Class != c || pe.Failover != f || pe.Code != code {
		t.Errorf("got class %s failover %v code %q, want %s %v %q (%v)", pe.Class, pe.Failover, pe.Code, c, f, code, err)
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("the error carries the password: %v", err)
	}
}

func TestSendsOverSTARTTLSWithAuth(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	p := newProvider(t, srv, nil)
	m := message("0190a5b0-0000-7000-8000-000000000001")
	res, err := p.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if res.Provider != "smtp" || res.MessageID != "<"+m.ID+"@example.com>" {
		t.Fatalf("result = %+v", res)
	}

	got := only(t, srv)
	if got.From != "forms@example.com" || len(got.To) != 1 || got.To[0] != "sales@example.com" {
		t.Errorf("envelope from %q to %q, want forms@example.com to sales@example.com", got.From, got.To)
	}
	if !got.TLS || got.Auth != user || got.Reply != 250 {
		t.Errorf("session TLS %v auth %q reply %d, want encrypted, authenticated as %s, 250", got.TLS, got.Auth, got.Reply, user)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.Data))
	if err != nil {
		t.Fatalf("parse the received message: %v\n%s", err, got.Data)
	}
	h := msg.Header
	if from, err := h.AddressList("From"); err != nil || len(from) != 1 || from[0].Address != "forms@example.com" || from[0].Name != "Example Forms" {
		t.Errorf("From = %v (%v)", from, err)
	}
	if to, err := h.AddressList("To"); err != nil || len(to) != 1 || to[0].Address != "sales@example.com" {
		t.Errorf("To = %v (%v)", to, err)
	}
	if rt, err := h.AddressList("Reply-To"); err != nil || len(rt) != 1 || rt[0].Address != "zoe@visitor.example" || rt[0].Name != "Zoë Visitor" {
		t.Errorf("Reply-To = %v (%v)", rt, err)
	}
	if raw := h.Get("Subject"); !strings.HasPrefix(raw, "=?utf-8?q?") {
		t.Errorf("Subject %q is not RFC 2047 encoded", raw)
	}
	if s, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject")); err != nil || s != m.Subject {
		t.Errorf("Subject decodes to %q (%v), want %q", s, err, m.Subject)
	}
	if id := h.Get("Message-ID"); id != res.MessageID {
		t.Errorf("Message-ID = %q, want %q", id, res.MessageID)
	}
	if d, err := h.Date(); err != nil || !d.Equal(sentAt) {
		t.Errorf("Date = %v (%v)", d, err)
	}
	text, html, err := mimemsg.ReadAlternative(msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(m.Text, "\n", "\r\n"); text != want || html != m.HTML {
		t.Errorf("parts text %q html %q, want %q and %q", text, html, want, m.HTML)
	}
}

func TestSendsOverImplicitTLS(t *testing.T) {
	srv := newFake(t, smtpfake.Config{ImplicitTLS: true})
	p := newProvider(t, srv, func(c *smtp.Config) { c.TLS = smtp.Implicit })
	if _, err := p.Send(context.Background(), message("d-implicit")); err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := only(t, srv); !got.TLS || got.Auth != user || got.Reply != 250 {
		t.Errorf("TLS %v auth %q reply %d", got.TLS, got.Auth, got.Reply)
	}
}

func TestSendsInPlainTextOnLoopback(t *testing.T) {
	srv := newFake(t, smtpfake.Config{NoSTARTTLS: true})
	p := newProvider(t, srv, func(c *smtp.Config) { c.TLS = smtp.NoTLS })
	if _, err := p.Send(context.Background(), message("d-plain")); err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := only(t, srv); got.TLS || got.Auth != user || got.Reply != 250 {
		t.Errorf("TLS %v auth %q reply %d, want plain text authenticated", got.TLS, got.Auth, got.Reply)
	}
}

func TestNewRefusesUnsafeOrBrokenConfig(t *testing.T) {
	base := smtp.Config{Address: "127.0.0.1:2525", From: "forms@example.com"}
	for name, edit := range map[string]func(*smtp.Config){
		"none to a host name":       func(c *smtp.Config) { c.Address, c.TLS = "smtp.example.com:25", smtp.NoTLS },
		"none to a public IP":       func(c *smtp.Config) { c.Address, c.TLS = "192.0.2.1:25", smtp.NoTLS },
		"unknown tls mode":          func(c *smtp.Config) { c.TLS = "ssl" },
		"no port":                   func(c *smtp.Config) { c.Address = "smtp.example.com" },
		"username without password": func(c *smtp.Config) { c.Username = user },
		"from with a line break":    func(c *smtp.Config) { c.From = "forms@example.com\r\nBcc: x@example.com" },
		"helo with a space":         func(c *smtp.Config) { c.HELO = "a b" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base
			edit(&cfg)
			if _, err := smtp.New(cfg); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	for _, addr := range []string{"127.0.0.1:25", "localhost:25", "[::1]:25"} {
		if _, err := smtp.New(smtp.Config{Address: addr, From: "forms@example.com", TLS: smtp.NoTLS}); err != nil {
			t.Errorf("tls none to %s: %v", addr, err)
		}
	}
}

func TestRefusesAServerWithoutSTARTTLS(t *testing.T) {
	srv := newFake(t, smtpfake.Config{NoSTARTTLS: true})
	p := newProvider(t, srv, nil)
	_, err := p.Send(context.Background(), message("d-no-starttls"))
	classOf(t, err, providers.Temporary, true, "no_starttls")
	if n := len(srv.Received()); n != 0 {
		t.Errorf("sent %d messages in plain text", n)
	}
}

func TestClassification(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stage    smtpfake.Stage
		reply    smtpfake.Reply
		class    providers.Class
		failover bool
		code     string
	}{
		{"421 greeting", smtpfake.Connect, smtpfake.Reply{Code: 421, Text: "4.3.2 try later"}, providers.Temporary, true, "connect_421"},
		{"554 greeting", smtpfake.Connect, smtpfake.Reply{Code: 554, Text: "5.3.2 no service"}, providers.Temporary, true, "connect_554"},
		{"EHLO refused", smtpfake.EHLO, smtpfake.Reply{Code: 550, Text: "5.7.1 go away"}, providers.Temporary, true, "ehlo_550"},
		{"535 AUTH", smtpfake.AUTH, smtpfake.Reply{Code: 535, Text: "5.7.8 authentication credentials invalid"}, providers.Permanent, true, "auth_535"},
		{"454 AUTH", smtpfake.AUTH, smtpfake.Reply{Code: 454, Text: "4.7.0 temporary authentication failure"}, providers.Temporary, true, "auth_454"},
		{"451 MAIL", smtpfake.MAIL, smtpfake.Reply{Code: 451, Text: "4.3.0 try later"}, providers.Temporary, true, "mail_451"},
		{"553 MAIL (sender not allowed)", smtpfake.MAIL, smtpfake.Reply{Code: 553, Text: "5.7.1 sender not owned by user"}, providers.Temporary, true, "mail_553"},
		{"451 RCPT", smtpfake.RCPT, smtpfake.Reply{Code: 451, Text: "4.7.1 greylisted"}, providers.Temporary, true, "rcpt_451"},
		{"550 RCPT", smtpfake.RCPT, smtpfake.Reply{Code: 550, Text: "5.1.1 no such user"}, providers.Permanent, false, "rcpt_550"},
		{"554 RCPT relay denied", smtpfake.RCPT, smtpfake.Reply{Code: 554, Text: "5.7.1 Relay access denied"}, providers.Temporary, true, "rcpt_554"},
		{"530 RCPT", smtpfake.RCPT, smtpfake.Reply{Code: 530, Text: "5.7.0 authentication required"}, providers.Temporary, true, "rcpt_530"},
		{"451 DATA", smtpfake.DATA, smtpfake.Reply{Code: 451, Text: "4.3.0 try later"}, providers.Temporary, true, "data_451"},
		{"554 DATA", smtpfake.DATA, smtpfake.Reply{Code: 554, Text: "5.5.1 no valid recipients"}, providers.Permanent, false, "data_554"},
		{"451 after DATA", smtpfake.DataEnd, smtpfake.Reply{Code: 451, Text: "4.3.0 queue full"}, providers.Temporary, true, "data_end_451"},
		{"554 after DATA", smtpfake.DataEnd, smtpfake.Reply{Code: 554, Text: "5.7.1 message rejected as spam"}, providers.Permanent, false, "data_end_554"},
		{"dropped at RCPT", smtpfake.RCPT, smtpfake.Reply{Drop: true}, providers.Temporary, true, "network"},
		{"dropped after DATA", smtpfake.DataEnd, smtpfake.Reply{Drop: true}, providers.Ambiguous, false, "network"},
		{"hung at MAIL", smtpfake.MAIL, smtpfake.Reply{Hang: true}, providers.Temporary, true, "timeout"},
		{"hung after DATA", smtpfake.DataEnd, smtpfake.Reply{Hang: true}, providers.Ambiguous, false, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, smtpfake.Config{})
			srv.At(tc.stage, tc.reply)
			if tc.stage == smtpfake.EHLO {
				srv.At(tc.stage, tc.reply) // net/smtp falls back to HELO: refuse that too
			}
			p := newProvider(t, srv, func(c *smtp.Config) { c.Timeout = 300 * time.Millisecond })
			res, err := p.Send(context.Background(), message("d-classify"))
			classOf(t, err, tc.class, tc.failover, tc.code)
			if res.Provider != "smtp" {
				t.Errorf("result names provider %q", res.Provider)
			}
			delivered := len(srv.Delivered())
			if delivered != 0 {
				t.Errorf("the fake delivered %d messages", delivered)
			}
			// Ambiguous means the whole message reached the server; anything earlier, none of it.
			if reached := len(srv.Received()) == 1; reached != (tc.stage == smtpfake.DataEnd) {
				t.Errorf("the fake received the whole message: %v", reached)
			}
		})
	}
}

func TestNetworkFailuresBeforeMAILFailOver(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		p, err := smtp.New(smtp.Config{Address: addr, From: "forms@example.com", Username: user, Password: password})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Send(context.Background(), message("d-refused"))
		classOf(t, err, providers.Temporary, true, "network")
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := newFake(t, smtpfake.Config{})
		p := newProvider(t, srv, func(c *smtp.Config) { c.RootCAs = nil })
		_, err := p.Send(context.Background(), message("d-untrusted"))
		classOf(t, err, providers.Temporary, true, "tls")
		if len(srv.Received()) != 0 {
			t.Error("sent through an untrusted connection")
		}
	})
	t.Run("wrong server name, implicit", func(t *testing.T) {
		srv := newFake(t, smtpfake.Config{ImplicitTLS: true})
		p := newProvider(t, srv, func(c *smtp.Config) { c.TLS, c.ServerName = smtp.Implicit, "smtp.example.com" })
		_, err := p.Send(context.Background(), message("d-wrong-name"))
		classOf(t, err, providers.Temporary, true, "tls")
	})
}

func TestWrongPasswordFailsOverAndIsNeverEchoed(t *testing.T) {
	srv := newFake(t, smtpfake.Config{Username: user, Password: "another-password"})
	p := newProvider(t, srv, nil)
	_, err := p.Send(context.Background(), message("d-bad-password"))
	classOf(t, err, providers.Permanent, true, "auth_535")
	if !providers.Classify(err).Destination {
		t.Error("a refused password is not marked as the relay account's failure (Destination)")
	}

	// A server that quotes what it was sent still cannot put the password in the error.
	srv2 := newFake(t, smtpfake.Config{})
	srv2.At(smtpfake.AUTH, smtpfake.Reply{Code: 535, Text: "5.7.8 no user " + user + " with password " + password})
	_, err = newProvider(t, srv2, nil).Send(context.Background(), message("d-echo"))
	classOf(t, err, providers.Permanent, true, "auth_535")
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %q: want the echoed password redacted", err)
	}
}

func TestRefusesHeaderInjection(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	p := newProvider(t, srv, nil)
	for name, edit := range map[string]func(*providers.Message){
		"subject":  func(m *providers.Message) { m.Subject = "Hello\r\nBcc: victim@example.net" },
		"reply-to": func(m *providers.Message) { m.ReplyTo = "a@example.com\nBcc: victim@example.net" },
		"to":       func(m *providers.Message) { m.To = "sales@example.com\r\nBcc: victim@example.net" },
	} {
		t.Run(name, func(t *testing.T) {
			m := message("d-inject")
			edit(&m)
			_, err := p.Send(context.Background(), m)
			classOf(t, err, providers.Permanent, false, "header_injection")
		})
	}
	if n := srv.Sessions(); n != 0 {
		t.Errorf("the provider connected %d times for messages it must refuse", n)
	}
}

func TestCancelledContextStopsASendAtOnce(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	srv.At(smtpfake.DataEnd, smtpfake.Reply{Hang: true})
	p := newProvider(t, srv, func(c *smtp.Config) { c.Timeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Send(ctx, message("d-cancel"))
		done <- err
	}()
	// Wait (bounded) until the server holds the whole message, then cancel.
	if !srv.WaitReceived(1, 5*time.Second) {
		t.Fatal("the message never reached the fake")
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		// Shutdown: Temporary without failover, as for the other providers
		// (providers.NetworkError); nobody should start another send now.
		classOf(t, err, providers.Temporary, false, "cancelled")
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("send returned %v after cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("send did not return after its context was cancelled")
	}

	// Already cancelled: no connection at all.
	before := srv.Sessions()
	_, err := p.Send(ctx, message("d-cancelled"))
	classOf(t, err, providers.Temporary, false, "cancelled")
	if srv.Sessions() != before {
		t.Error("connected with a cancelled context")
	}
}

func TestRetryKeepsTheMessageID(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	srv.At(smtpfake.DataEnd, smtpfake.Reply{Drop: true})
	p := newProvider(t, srv, nil)
	m := message("d-retry")
	if _, err := p.Send(context.Background(), m); err == nil {
		t.Fatal("first send succeeded")
	}
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatalf("retry: %v", err)
	}
	got := srv.Received()
	if len(got) != 2 {
		t.Fatalf("received %d messages, want 2", len(got))
	}
	ids := [2]string{}
	for i, g := range got {
		msg, err := mail.ReadMessage(bytes.NewReader(g.Data))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = msg.Header.Get("Message-ID")
	}
	if ids[0] != ids[1] || ids[0] != "<d-retry@example.com>" {
		t.Errorf("Message-IDs %q, want both <d-retry@example.com>", ids)
	}
}

// TestDataHeadersAreFoldedAndSafe checks the DATA the server receives: SMTP (RFC 5321)
// allows at most 1,000 octets a line, and each header line must fold near 78 and
// decode to exactly what intake stored, with no line break smuggled in by visitor text
// that looks like an encoded word, no bidi control and an ASCII Reply-To.
func TestDataHeadersAreFoldedAndSafe(t *testing.T) {
	srv := newFake(t, smtpfake.Config{})
	p := newProvider(t, srv, nil)
	m := message("0190a5b0-0000-7000-8000-00000000000f")
	m.Subject = "New enquiry from " + strings.Repeat("😀", 120) + " =?utf-8?b?DQpCY2M6IGV2aWxAeC50ZXN0?= \u202eend"
	m.ReplyTo = "bob@bücher.test"
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	data := only(t, srv).Data
	head, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	for i, line := range strings.Split(string(head), "\r\n") {
		if len(line) > 78 || (i > 0 && !strings.Contains(line, ":") && !strings.HasPrefix(line, " ")) {
			t.Errorf("header line %d (%d octets) is not folded near 78: %q", i+1, len(line), line)
		}
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	want := "New enquiry from " + strings.Repeat("😀", 120) + " =?utf-8?b?DQpCY2M6IGV2aWxAeC50ZXN0?= end"
	if s, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil || s != want {
		t.Errorf("Subject decodes to %q (%v), want %q", s, err, want)
	}
	if rt, err := msg.Header.AddressList("Reply-To"); err != nil || len(rt) != 1 || rt[0].Address != "bob@xn--bcher-kva.test" {
		t.Errorf("Reply-To = %v (%v), want bob@xn--bcher-kva.test", rt, err)
	}
}
