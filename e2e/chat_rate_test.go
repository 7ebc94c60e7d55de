package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/providers/discordfake"
	"github.com/formoutbox/caddy-form-outbox/providers/slackfake"
)

// chatRateCaddyfile sends every post to Slack at its default rate and to Discord at a
// configured one.
const chatRateCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify slack {{SLACK}}
		notify discord {{DISCORD}} {
			rate 0.5/s
		}
	}
}
`

// TestChatRatesPaceThroughCaddy: through the built Caddy, posts that arrive together are
// posted to a Slack webhook at its default 1/s and to a Discord webhook at its `rate
// 0.5/s` (not Discord's default 2/s), each with one attempt: pacing defers, it never
// charges.
func TestChatRatesPaceThroughCaddy(t *testing.T) {
	t.Parallel()
	sl, dc := slackfake.New(), discordfake.New()
	t.Cleanup(sl.Close)
	t.Cleanup(dc.Close)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.NewReplacer("{{SLACK}}", sl.URL(), "{{DISCORD}}", dc.URL()).Replace(chatRateCaddyfile)})
	const posts = 4
	for i := range posts {
		resp, _ := postForm(t, p, url.Values{"message": {fmt.Sprintf("paced %d", i)}}, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("post %d: %d", i, resp.StatusCode)
		}
	}
	if err := waitFor(60*time.Second, func() bool { return len(sl.Messages()) == posts && len(dc.Messages()) == posts }); err != nil {
		t.Fatalf("%d slack and %d discord messages of %d: %v\n%s", len(sl.Messages()), len(dc.Messages()), posts, err, p.Log())
	}
	for _, c := range []struct {
		name     string
		at       []time.Time
		interval time.Duration
	}{
		{"slack (default 1/s)", requestTimes(sl.Messages(), func(m slackfake.Sent) time.Time { return m.At }), time.Second},
		{"discord (rate 0.5/s)", requestTimes(dc.Messages(), func(m discordfake.Sent) time.Time { return m.At }), 2 * time.Second},
	} {
		for i := 1; i < len(c.at); i++ {
			// A claim a little late may bring two sends closer by its lateness, never by
			// much (docs/design.md, "Pacing").
			if gap := c.at[i].Sub(c.at[i-1]); gap < c.interval*9/10 {
				t.Errorf("%s: messages %d and %d %v apart, want about %v", c.name, i-1, i, gap, c.interval)
			}
		}
	}
	db := openSQLite(t, filepath.Join(p.dir, "forms.db"))
	var deliveries, attempts, maxAttempts int
	// The outcome is written just after the fake answered.
	if err := waitFor(20*time.Second, func() bool {
		return db.QueryRow(`SELECT count(*), COALESCE(max(attempts), 0) FROM deliveries WHERE status = 'sent'`).
			Scan(&deliveries, &maxAttempts) == nil && deliveries == 2*posts
	}); err != nil {
		t.Fatalf("%d deliveries recorded sent, want %d: %v", deliveries, 2*posts, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM delivery_attempts`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if deliveries != 2*posts || attempts != 2*posts || maxAttempts != 1 {
		t.Errorf("%d sent deliveries, %d attempt rows, at most %d attempts each; want %d, %d, 1", deliveries, attempts, maxAttempts, 2*posts, 2*posts)
	}
}

// requestTimes lists when each message arrived, in order.
func requestTimes[M any](ms []M, at func(M) time.Time) []time.Time {
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = at(m)
	}
	return out
}
