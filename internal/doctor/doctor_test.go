package doctor_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/internal/doctor"
	"github.com/formoutbox/caddy-form-outbox/internal/senders"
	"github.com/formoutbox/caddy-form-outbox/internal/storage"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/providers/smtpfake"
	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

// TestCheckReportsEveryRoute: against fakes, the report has the store with its
// migration, one line per route (ready, or what is wrong), a store_only form and the
// alert targets; it is ok only when every line is ready, and nothing is sent.
func TestCheckReportsEveryRoute(t *testing.T) {
	dir := t.TempDir()
	relay := smtpfake.New(smtpfake.Config{Username: "forms", Password: "secret"})
	t.Cleanup(relay.Close)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, relay.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(hook.Close)
	bot := telegramfake.New("123:token")
	t.Cleanup(bot.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadHook := "http://" + ln.Addr().String() + "/hooks/x"
	ln.Close()

	in := doctor.Input{
		Store: storage.Config{Driver: storage.DriverSQLite, Path: filepath.Join(dir, "forms.db")},
		Email: senders.Email{From: "forms@example.com", SMTP: &senders.SMTP{Address: relay.Addr(), Username: "forms",
			Password: "secret", ServerName: "localhost", CAFile: ca}},
		Forms: []intake.Config{
			{Form: "contact", Routes: []intake.Route{
				{Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}},
				{Channel: outbox.ChannelWebhook, URL: hook.URL + "/crm"},
				{Channel: outbox.ChannelTelegram, ChatID: "-100", Token: "123:token", Endpoint: bot.URL()},
			}},
			{Form: "survey", StoreOnly: true},
		},
		AlertEmail:  true,
		AlertRoutes: []intake.Route{{Channel: outbox.ChannelTelegram, ChatID: "-100777", Token: "123:token", Endpoint: bot.URL()}},
	}
	lines, ok := doctor.Check(context.Background(), in)
	got := joinLines(lines)
	want := "store sqlite " + in.Store.Path + " (migration "
	if !ok || !strings.HasPrefix(got, want) || !strings.Contains(got, "form contact route email: ready\nform contact route webhook: ready\n"+
		"form contact route telegram: ready\nform survey: ready\nalerts target email: ready\nalerts target telegram: ready\n") {
		t.Fatalf("ok=%v, report:\n%s", ok, got)
	}

	in.Forms[0].Routes = append(in.Forms[0].Routes, intake.Route{Channel: outbox.ChannelWebhook, URL: deadHook},
		intake.Route{Channel: outbox.ChannelTelegram, ChatID: "-100", Token: "123:revoked", Endpoint: bot.URL()},
		intake.Route{Channel: outbox.ChannelTelegram, ChatID: "-100999", Token: "123:token", Endpoint: bot.URL()})
	bot.Kick("-100999")
	in.Email.SMTP.Password = "wrong"
	relay.At(smtpfake.AUTH, smtpfake.Reply{Code: 535, Text: "5.7.8 authentication credentials invalid"})
	lines, ok = doctor.Check(context.Background(), in)
	got = joinLines(lines)
	for _, want := range []string{
		"form contact route email: e-mail provider smtp: ",
		"form contact route webhook-2: connect to " + ln.Addr().String() + ": ",
		"form contact route telegram-2: permanent unauthorized (HTTP 401): telegram answered 401: Unauthorized",
		"form contact route telegram-3: chat -100999: permanent bot_kicked (HTTP 403): telegram answered 403: Forbidden: bot was kicked from the group chat",
		"alerts target email: e-mail provider smtp: ",
		"alerts target telegram: ready",
	} {
		if ok || !strings.Contains(got, want) {
			t.Errorf("ok=%v, want a line %q in:\n%s", ok, want, got)
		}
	}
	if strings.Contains(got, "123:revoked") || strings.Contains(got, "wrong") || strings.Contains(got, "/hooks/x") {
		t.Errorf("a secret in the report:\n%s", got)
	}
	if len(relay.Received()) != 0 || len(bot.Messages()) != 0 {
		t.Fatal("the check sent a message")
	}
}

func joinLines(lines []doctor.Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	return b.String()
}
