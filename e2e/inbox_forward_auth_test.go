package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The forward_auth here covers /inbox/* but not /inbox itself, a slip a Caddyfile makes
// easily: the inbox must still serve no one on /inbox.
const inboxForwardAuthCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage sqlite {{DIR}}/forms.db
	}
}
http://127.0.0.1:{{HTTP}} {
	forward_auth /inbox/* {{AUTH}} {
		uri /auth
		copy_headers Remote-User
	}
	form_outbox_inbox /inbox* {
		user_header Remote-User
	}
	respond "static site"
}
`

// TestInboxForwardAuthHeaderTrust proves that a client sending the user header itself
// never gets into an inbox protected by forward_auth: not when the auth server refuses
// it, not when the auth server lets it through without naming a user, and not on a path
// the forward_auth's matcher misses.
func TestInboxForwardAuthHeaderTrust(t *testing.T) {
	t.Parallel()
	authSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer alice":
			w.Header().Set("Remote-User", "alice")
			w.WriteHeader(http.StatusOK)
		case "Bearer anonymous":
			// An auth server that lets a request through without naming anyone.
			w.WriteHeader(http.StatusOK)
		default:
			http.Error(w, "who are you?", http.StatusUnauthorized)
		}
	}))
	t.Cleanup(authSrv.Close)
	p := newCaddy(t, caddyOpts{Caddyfile: strings.ReplaceAll(inboxForwardAuthCaddyfile, "{{AUTH}}",
		strings.TrimPrefix(authSrv.URL, "http://"))})
	waitUp(t, p)

	get := func(path, bearer string) (*http.Response, string) {
		t.Helper()
		req := inboxReq(t, "GET", p.URL(path), nil)
		req.Header.Set("Remote-User", "admin")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return do(t, req)
	}

	resp, body := get("/inbox/", "")
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "Signed in") {
		t.Errorf("spoofed header, auth refused: %d %q, want the auth server's 401", resp.StatusCode, body)
	}
	resp, body = get("/inbox/", "anonymous")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "user_header") {
		t.Errorf("spoofed header, auth passed without a user: %d %q, want 403 saying how to protect it", resp.StatusCode, body)
	}
	resp, body = get("/inbox", "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "user_header") {
		t.Errorf("spoofed header on a path forward_auth misses: %d %q, want 403 saying how to protect it", resp.StatusCode, body)
	}

	// The user the auth server names gets in, under that name and not the client's.
	resp, body = get("/inbox/", "alice")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Signed in as <strong>alice</strong>") {
		t.Errorf("authenticated: %d, want 200 signed in as alice:\n%s", resp.StatusCode, body)
	}
}
