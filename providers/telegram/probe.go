package telegram

import (
	"context"
	"net/http"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Probe asks the Bot API who the bot is (getMe, which reads and posts nothing): a
// wrong or revoked token answers 401. It does not prove the bot is still in the chat; a
// chat the bot was removed from shows on the first message (bot_kicked). The token
// never reaches the error.
func Probe(ctx context.Context, bot Bot) error {
	endpoint := strings.TrimRight(bot.Endpoint, "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	p := chat.NewPoster(chat.Config{})
	a, perr := p.Post(ctx, endpoint+"/bot"+bot.Token+"/getMe", []byte("{}"), bot.Token)
	if perr != nil {
		return perr
	}
	if a.Status != http.StatusOK {
		_, err := classify(a)
		err.Err = chat.Redact(err.Err, bot.Token)
		return err
	}
	return nil
}
