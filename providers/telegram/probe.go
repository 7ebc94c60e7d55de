package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// Probe asks the Bot API who the bot is (getMe) and, given a chat, for that chat
// (getChat): both read and post nothing. A wrong or revoked token answers 401 to the
// first; a chat the bot was removed from (or never joined) is refused by the second,
// which is how a lead would otherwise be lost, message after message. The token never
// reaches the error.
func Probe(ctx context.Context, bot Bot, chatID string) error {
	endpoint := strings.TrimRight(bot.Endpoint, "/")
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	p := chat.NewPoster(chat.Config{})
	ask := func(method string, body []byte) error {
		a, perr := p.Post(ctx, endpoint+"/bot"+bot.Token+"/"+method, body, bot.Token)
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
	if err := ask("getMe", []byte("{}")); err != nil {
		return err
	}
	if chatID == "" {
		return nil
	}
	body, err := json.Marshal(map[string]string{"chat_id": chatID})
	if err != nil {
		return err
	}
	if err := ask("getChat", body); err != nil {
		return fmt.Errorf("chat %s: %w", chatID, err)
	}
	return nil
}
