package caddyconf

import (
	"encoding/json"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// ParseInboxDirective reads the operator's inbox directive into ih and returns its
// matcher set (the root's parseInboxDirective makes the route):
//
//	form_outbox_inbox /inbox* {
//		forms NAME...                      # which forms it shows (default: all)
//		title TEXT                         # heads every page
//		base_path /PATH                    # default: from the matcher /PATH*
//		user_header NAME                   # the header of the forward_auth answer naming the user
//		protected_elsewhere                # serve without a Caddy auth handler
//	}
//
// It is registered with RegisterDirective because the matcher gives the base path. Put
// basic_auth (or forward_auth) on the same paths: without one, the inbox answers 403.
func ParseInboxDirective(h httpcaddyfile.Helper, ih *Inbox) (caddy.ModuleMap, error) {
	if !h.Next() {
		return nil, h.ArgErr()
	}
	matcherSet, err := h.ExtractMatcherSet()
	if err != nil {
		return nil, err
	}
	if err := ParseInbox(h.Dispenser, ih); err != nil {
		return nil, err
	}
	if ih.BasePath == "" {
		base, ok := inboxBaseFromMatcher(matcherSet)
		if !ok {
			h.Reset()
			h.Next()
			return nil, h.Errf("add `base_path /PATH`: the inbox's path can be derived only from a single path matcher such as /inbox*")
		}
		ih.BasePath = base
	}
	return matcherSet, nil
}

// inboxBaseFromMatcher reads /inbox* (or /inbox/*) as the base path /inbox.
func inboxBaseFromMatcher(set caddy.ModuleMap) (string, bool) {
	if len(set) != 1 {
		return "", false
	}
	var paths []string
	if err := json.Unmarshal(set["path"], &paths); err != nil || len(paths) != 1 {
		return "", false
	}
	base := strings.TrimRight(strings.TrimSuffix(paths[0], "*"), "/")
	if base == "" || !strings.HasPrefix(base, "/") || strings.ContainsAny(base, "*?[") {
		return "", false
	}
	return base, true
}

// ParseInbox reads the directive's block; see ParseInboxDirective.
func ParseInbox(d *caddyfile.Dispenser, ih *Inbox) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "forms":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			ih.Forms = append(ih.Forms, args...)
		case "title":
			v, err := singleArg(d)
			if err != nil {
				return err
			}
			ih.Title = v
		case "base_path":
			v, err := singleArg(d)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(v, "/") {
				return d.Errf("base_path %q: want a path starting with /", v)
			}
			ih.BasePath = strings.TrimRight(v, "/")
		case "user_header":
			v, err := singleArg(d)
			if err != nil {
				return err
			}
			ih.UserHeader = v
		case "protected_elsewhere":
			if d.NextArg() {
				return d.ArgErr()
			}
			ih.ProtectedElsewhere = true
		default:
			return d.Errf("unknown form_outbox_inbox option %q", d.Val())
		}
	}
	return nil
}

// parseInboxURL reads the global `inbox_url URL`: an absolute http(s) URL, since it
// goes into emails read far from this server.
func parseInboxURL(d *caddyfile.Dispenser) (string, error) {
	v, err := singleArg(d)
	if err != nil {
		return "", err
	}
	if err := intake.CheckInboxURL(v); err != nil {
		return "", d.Errf("inbox_url %v", err)
	}
	return strings.TrimRight(v, "/"), nil
}
