package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/discordfake"
	"github.com/formoutbox/caddy-form-outbox/providers/slackfake"
	"github.com/formoutbox/caddy-form-outbox/providers/teamsfake"
	"github.com/formoutbox/caddy-form-outbox/providers/telegramfake"
)

// chatCaddyfile routes a contact form by its topic field to each chat channel, each
// pointed at its fake, with the rest going to the email fallback (the file provider).
const chatCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		# Parking off: a permanent refusal is checked as dead here; e2e/park_test.go checks parking.
		park off
		storage sqlite {{DIR}}/forms.db
		retry {
			base 200ms
			max_delay 1s
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify telegram -100123 {
			token {env.E2E_TELEGRAM_TOKEN}
			endpoint {{TELEGRAM}}
			when field topic is telegram
		}
		notify slack {{SLACK}} {
			when field topic is slack
		}
		notify discord {{DISCORD}} {
			when field topic is discord
		}
		notify teams {{TEAMS}} {
			when field topic is teams
		}
		notify email ops@example.com {
			fallback
		}
	}
}
`

const telegramToken = "4242:e2e-telegram-token-SECRET"

type chatDelivery struct {
	ID, Route, Status, LastError, Provider, MessageID string
	Attempts                                          int
}

// chatDeliveryOf waits until the only delivery of the submission whose data holds
// marker has the wanted status, and returns it.
func chatDeliveryOf(t *testing.T, db *sql.DB, marker, status string) chatDelivery {
	t.Helper()
	var d chatDelivery
	err := waitFor(20*time.Second, func() bool {
		row := db.QueryRow(`SELECT d.id, d.route, d.status, COALESCE(d.last_error, ''), COALESCE(d.provider, ''),
			COALESCE(d.provider_message_id, ''), d.attempts FROM deliveries d JOIN submissions s ON s.id = d.submission_id
			WHERE s.data LIKE ?`, "%"+marker+"%")
		return row.Scan(&d.ID, &d.Route, &d.Status, &d.LastError, &d.Provider, &d.MessageID, &d.Attempts) == nil && d.Status == status
	})
	if err != nil {
		t.Fatalf("delivery of %q not %s (last seen %+v): %v", marker, status, d, err)
	}
	return d
}

// startChatCaddy starts the four chat fakes and a Caddy running chatCaddyfile against
// them; the fakes close when the test ends.
func startChatCaddy(t *testing.T) (*telegramfake.Server, *slackfake.Server, *discordfake.Server, *teamsfake.Server, *caddyProc, *sql.DB) {
	t.Helper()
	tg := telegramfake.New(telegramToken)
	sl, dc, tm := slackfake.New(), discordfake.New(), teamsfake.New()
	for _, c := range []interface{ Close() }{tg, sl, dc, tm} {
		t.Cleanup(c.Close)
	}
	cf := strings.NewReplacer("{{TELEGRAM}}", tg.URL(), "{{SLACK}}", sl.URL(), "{{DISCORD}}", dc.URL(),
		"{{TEAMS}}", tm.URL()).Replace(chatCaddyfile)
	p := newCaddy(t, caddyOpts{Caddyfile: cf, Env: []string{"E2E_TELEGRAM_TOKEN=" + telegramToken}})
	return tg, sl, dc, tm, p, openSQLite(t, filepath.Join(p.dir, "forms.db"))
}

// TestChatChannelsEndToEnd is issue 17's "done when" for the channels: through the built
// Caddy, each chat channel delivers to its fake in its wire format, a permanent refusal
// makes the delivery dead after one attempt, a 429 is retried and then sent, what no
// guard matched goes to the fallback, and the bot token reaches neither the log nor the
// database.
func TestChatChannelsEndToEnd(t *testing.T) {
	t.Parallel()
	tg, sl, dc, tm, p, db := startChatCaddy(t)

	post := func(topic, marker string) {
		t.Helper()
		resp, _ := postForm(t, p, url.Values{"topic": {topic}, "message": {"Hello <!channel> @everyone " + marker}}, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("post %s: %d", marker, resp.StatusCode)
		}
	}
	channels := []string{"telegram", "slack", "discord", "teams"}

	// 1. Each channel delivers, once, with the visitor's text inert.
	for _, ch := range channels {
		post(ch, "ok-"+ch)
	}
	for _, ch := range channels {
		d := chatDeliveryOf(t, db, "ok-"+ch, "sent")
		if d.Route != ch || d.Provider != ch || d.Attempts != 1 {
			t.Fatalf("%s delivery %+v", ch, d)
		}
	}
	if ms := tg.Messages(); len(ms) != 1 || ms[0].Message.ChatID != "-100123" || !strings.Contains(ms[0].Visible, "Hello <!channel> @everyone ok-telegram") ||
		!ms[0].Message.LinkPreviewOptions.IsDisabled {
		t.Fatalf("telegram got %+v", ms)
	}
	if ms := sl.Messages(); len(ms) != 1 || !strings.Contains(strings.Join(ms[0].Sections, "\n"), "ok-slack") || len(ms[0].Specials) != 0 {
		t.Fatalf("slack got %+v", ms)
	}
	if ms := dc.Messages(); len(ms) != 1 || !strings.Contains(ms[0].Visible, "ok-discord") || len(ms[0].Pings) != 0 {
		t.Fatalf("discord got %+v", ms)
	}
	if cs := tm.Cards(); len(cs) != 1 || !strings.Contains(fmt.Sprint(cs[0].Blocks), "ok-teams") {
		t.Fatalf("teams got %+v", cs)
	}
	if d := chatDeliveryOf(t, db, "ok-telegram", "sent"); d.MessageID != fmt.Sprint(tg.Messages()[0].MessageID) {
		t.Fatalf("telegram message id %q, want %d", d.MessageID, tg.Messages()[0].MessageID)
	}
	if d := chatDeliveryOf(t, db, "ok-discord", "sent"); d.MessageID == "" || d.MessageID != dc.Messages()[0].ID {
		t.Fatalf("discord message id %q, want %q", d.MessageID, dc.Messages()[0].ID)
	}

	// 2. A permanent refusal: dead after one attempt, the service's words in the error.
	tg.Enqueue(telegramfake.BotBlocked())
	sl.Enqueue(slackfake.ChannelIsArchived())
	dc.Enqueue(discordfake.UnknownWebhook())
	tm.Enqueue(teamsfake.WorkflowNotFound())
	for _, ch := range channels {
		post(ch, "dead-"+ch)
	}
	for ch, words := range map[string]string{"telegram": "bot was blocked by the user", "slack": "channel_is_archived",
		"discord": "Unknown Webhook", "teams": "404"} {
		d := chatDeliveryOf(t, db, "dead-"+ch, "dead")
		if d.Attempts != 1 || !strings.Contains(d.LastError, words) {
			t.Fatalf("%s dead delivery %+v, want one attempt and %q", ch, d, words)
		}
		if as := attemptsOf(t, db, d.ID); len(as) != 1 || as[0].Outcome != "permanent" || as[0].Provider != ch {
			t.Fatalf("%s attempts %+v", ch, as)
		}
	}

	// 3. A 429: retried after the wait the service asked for, then sent.
	tg.Enqueue(telegramfake.TooManyRequests(1))
	sl.Enqueue(slackfake.RateLimited("1"))
	dc.Enqueue(discordfake.RateLimited(0.5))
	tm.Enqueue(teamsfake.TooManyRequests("1"))
	for _, ch := range channels {
		post(ch, "busy-"+ch)
	}
	for _, ch := range channels {
		d := chatDeliveryOf(t, db, "busy-"+ch, "sent")
		as := attemptsOf(t, db, d.ID)
		if len(as) != 2 || as[0].Outcome != "temporary" || as[1].Outcome != "sent" {
			t.Fatalf("%s attempts %+v, want temporary then sent", ch, as)
		}
	}

	// 4. What no guard matched goes to the fallback, and to no chat.
	post("other", "fallback-e2e")
	if d := chatDeliveryOf(t, db, "fallback-e2e", "sent"); d.Route != "email" {
		t.Fatalf("fallback delivery %+v", d)
	}

	var leaked int
	if err := db.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE payload LIKE ? OR last_error LIKE ?`,
		"%"+telegramToken+"%", "%"+telegramToken+"%").Scan(&leaked); err != nil || leaked != 0 {
		t.Fatalf("the bot token is in %d deliveries (%v)", leaked, err)
	}
	if log := p.Log(); strings.Contains(log, telegramToken) || strings.Contains(log, "the-webhook-token-secret") {
		t.Errorf("a secret reached the log:\n%s", log)
	}
}

// TestHungChatRequestIsAmbiguousRetriedAndCounted: a chat request that was sent and
// never answered may have posted the message, and chat services take no idempotency
// key, so the attempt is recorded ambiguous (after providers/chat.DefaultTimeout),
// counted in form_outbox_deliveries_total, and retried until sent.
func TestHungChatRequestIsAmbiguousRetriedAndCounted(t *testing.T) {
	t.Parallel()
	_, sl, _, _, p, db := startChatCaddy(t)
	sl.Enqueue(slackfake.Reply{Hang: true})
	resp, _ := postForm(t, p, url.Values{"topic": {"slack"}, "message": {"hung-slack"}}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d", resp.StatusCode)
	}
	var as []attemptRow
	var id string
	if err := waitFor(45*time.Second, func() bool {
		if db.QueryRow(`SELECT d.id FROM deliveries d JOIN submissions s ON s.id = d.submission_id
			WHERE s.data LIKE '%hung-slack%' AND d.status = 'sent'`).Scan(&id) != nil {
			return false
		}
		as = attemptsOf(t, db, id)
		return true
	}); err != nil {
		t.Fatalf("the hung slack delivery was never sent: %v", err)
	}
	if len(as) != 2 || as[0].Outcome != "ambiguous" || as[1].Outcome != "sent" {
		t.Fatalf("attempts %+v, want ambiguous then sent", as)
	}
	if n := len(sl.Requests()); n != 2 {
		t.Errorf("slack got %d requests, want the hung one and its retry", n)
	}
	p.waitMetric(t, 1, "form_outbox_deliveries_total", "channel", "slack", "outcome", "ambiguous")
	p.waitMetric(t, 1, "form_outbox_deliveries_total", "channel", "slack", "outcome", "sent")
}
