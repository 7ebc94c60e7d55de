// Package telegram posts submissions to a Telegram chat through the Bot API
// (sendMessage). The bot token is a secret: it is only ever put in the request URL at
// send time, never in the stored payload, an error or a result.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// DefaultEndpoint is the Bot API's base URL.
const DefaultEndpoint = "https://api.telegram.org"

// DefaultRate paces the messages to one chat: Telegram's Bot FAQ asks bots to send no
// more than one message a second to a chat. The `rate` of a telegram route overrides it.
const DefaultRate = "1/s"

// BotRate is the pace of all the messages of one bot, across its chats: the Bot FAQ's
// limit of about 30 messages a second per bot.
const BotRate = 30.0

// Bot is one bot's credentials and where its API lives.
type Bot struct {
	// Token is the bot token (123456:ABC...). A secret.
	Token string
	// Endpoint overrides DefaultEndpoint (a test fake, a local Bot API server).
	Endpoint string
}

// Config configures the Telegram provider.
type Config struct {
	// Bot returns the bot that posts to a chat id (the delivery's recipient); ok=false
	// means none is configured, which no retry can fix. Tokens live in the config, so a
	// token changed in the Caddyfile applies to deliveries already stored.
	Bot func(chatID string) (bot Bot, ok bool)
	chat.Config
}

// Provider sends Telegram messages.
type Provider struct {
	chat.Poster
	bot func(chatID string) (Bot, bool)
}

// New returns a Telegram provider; it makes no request.
func New(cfg Config) (*Provider, error) {
	if cfg.Bot == nil {
		return nil, errors.New("telegram: no bot configured")
	}
	return &Provider{Poster: chat.NewPoster(cfg.Config), bot: cfg.Bot}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "telegram" }

// Send posts m.Body (rendered by Render) as the bot configured for chat m.To.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	bot, ok := p.bot(m.To)
	if !ok || bot.Token == "" {
		return res, &providers.Error{Class: providers.Permanent, Code: "no_bot",
			Err: fmt.Errorf("no telegram bot token is configured for chat %s", m.To)}
	}
	endpoint := strings.TrimRight(bot.Endpoint, "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	a, perr := p.Post(ctx, endpoint+"/bot"+bot.Token+"/sendMessage", m.Body, bot.Token)
	if perr != nil {
		return res, perr
	}
	id, err := classify(a)
	if err != nil {
		err.Err = chat.Redact(err.Err, bot.Token)
		return res, err
	}
	res.MessageID = id
	return res, nil
}

// answer is the Bot API's reply envelope.
type answer struct {
	OK          bool   `json:"ok"`
	ErrorCode   int    `json:"error_code"`
	Description string `json:"description"`
	Result      struct {
		MessageID int64 `json:"message_id"`
	} `json:"result"`
	Parameters struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// codes names the refusals an operator meets most; their text is Telegram's own.
var codes = map[string]string{
	"Bad Request: chat not found":                        "chat_not_found",
	"Forbidden: bot was blocked by the user":             "bot_blocked",
	"Forbidden: bot was kicked from the group chat":      "bot_kicked",
	"Forbidden: bot was kicked from the supergroup chat": "bot_kicked",
	"Forbidden: bot is not a member of the channel chat": "bot_not_member",
	"Unauthorized": "unauthorized",
}

// destinationCodes are the refusals that no message to the chat can get past: the
// destination's, so the outbox parks the chat (providers.Error.Destination).
var destinationCodes = map[string]bool{
	"chat_not_found": true, "bot_blocked": true, "bot_kicked": true, "bot_not_member": true,
	"unauthorized": true, "chat_migrated": true,
}

// classify maps an answer: 2xx with ok is sent (the message id recorded); a refusal
// is classified by chat.Refusal, with parameters.retry_after as the wait on 429. A group
// that became a supergroup is Permanent too, with the new id in the error, because the
// configured chat id has to change.
func classify(a chat.Answer) (string, *providers.Error) {
	var ans answer
	decoded := json.Unmarshal(a.Body, &ans) == nil
	if a.OK() {
		if decoded && ans.Result.MessageID != 0 {
			return strconv.FormatInt(ans.Result.MessageID, 10), nil
		}
		// Posted; only the id is unknown.
		return "", nil
	}
	desc := ans.Description
	if desc == "" {
		desc = http.StatusText(a.Status)
	}
	code := codes[desc]
	if a.Status == http.StatusTooManyRequests {
		code = "too_many_requests"
	}
	perr := chat.Refusal(a, "telegram", code, desc, time.Duration(ans.Parameters.RetryAfter)*time.Second)
	if to := ans.Parameters.MigrateToChatID; to != 0 && perr.Class == providers.Permanent {
		perr.Code = "chat_migrated"
		perr.Err = fmt.Errorf("telegram answered %d: the group is now the supergroup %d; configure that chat id and retry", a.Status, to)
	}
	if perr.Class == providers.Permanent && destinationCodes[perr.Code] {
		// Telegram answers 400 for a chat that is not there: the chat's failure all the
		// same, not this message's.
		perr.Destination = true
	}
	return "", perr
}

var _ providers.Provider = (*Provider)(nil)
