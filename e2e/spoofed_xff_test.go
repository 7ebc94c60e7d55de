package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Without trusted_proxies, Caddy ignores X-Forwarded-For: a client cannot become many
// clients by sending a different header with each post, so the rate limit holds and the
// stored client address is the connection's.
const spoofCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		field message required
		client_ip full
		rate_limit 2 10m
		store_only
	}
}
`

func TestSpoofedForwardedForDoesNotEscapeTheRateLimit(t *testing.T) {
	t.Parallel()
	p := newCaddy(t, caddyOpts{Caddyfile: spoofCaddyfile})
	var codes []int
	var stored []string
	for i := range 5 {
		body := url.Values{"message": {fmt.Sprintf("post %d", i)}}.Encode()
		req, _ := http.NewRequest(http.MethodPost, p.URL("/contact"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i+1))
		req.Header.Set("X-Real-IP", fmt.Sprintf("198.51.100.%d", i+1))
		resp, answer := do(t, req)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusOK {
			var a struct{ ID string }
			if err := json.Unmarshal([]byte(answer), &a); err != nil || a.ID == "" {
				t.Fatalf("post %d: answer %q", i, answer)
			}
			stored = append(stored, a.ID)
		}
	}
	if fmt.Sprint(codes) != "[200 200 429 429 429]" {
		t.Fatalf("answers to 5 posts with 5 different X-Forwarded-For headers = %v, want [200 200 429 429 429]", codes)
	}
	for _, id := range stored {
		var s struct {
			Status string
			Meta   struct {
				ClientIP string `json:"client_ip"`
			}
		}
		p.adminJSON(t, http.MethodGet, "/form_outbox/submissions/"+id, 200, &s)
		if s.Status != "accepted" || s.Meta.ClientIP != "127.0.0.1" {
			t.Errorf("submission %s: status %q, client_ip %q; want accepted from 127.0.0.1 (the connection, not a header)", id, s.Status, s.Meta.ClientIP)
		}
	}
}
