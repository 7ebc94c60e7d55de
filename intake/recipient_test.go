package intake

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

func TestPublicRecipientDomain(t *testing.T) {
	for addr, want := range map[string]bool{
		"ada@example.com":                       true,
		"ada@mail.example.co.uk":                true,
		"ada@xn--bcher-kva.de":                  true,
		"ada@bücher.de":                         true,
		"ada@a-b.example.org":                   true,
		"ada@EXAMPLE.COM":                       true,
		"ip@[10.0.0.1]":                         false,
		"ip@[127.0.0.1]":                        false,
		"ip@[IPv6:::1]":                         false,
		"ip@10.0.0.1":                           false,
		"ip@127.1":                              false,
		"x@localhost":                           false,
		"x@internal":                            false,
		"a@b":                                   false,
		"x@mail.localhost":                      false,
		"x@printer.local":                       false,
		"x@db.internal":                         false,
		"x@LOCALHOST.":                          false,
		"x@example.com.":                        false,
		"x@host.test":                           false,
		"x@host.example":                        false,
		"x@host.invalid":                        false,
		"x@router.home.arpa":                    false,
		"x@1.0.0.10.in-addr.arpa":               false,
		"x@hidden.onion":                        false,
		"x@box.alt":                             false,
		"x@nas.lan":                             false,
		"x@-bad.example.com":                    false,
		"x@bad-.example.com":                    false,
		"x@a..example.com":                      false,
		"x@under_score.example.com":             false,
		"x@":                                    false,
		"x@" + strings.Repeat("a", 64) + ".com": false,
		"x@" + strings.Repeat("a", 63) + ".com": true,
	} {
		if got := publicRecipient(addr); got != want {
			t.Errorf("publicRecipient(%q) ok = %v, want %v", addr, got, want)
		}
	}
}

// A visitor's address on an IP literal, a single label or a reserved name is still
// stored as data, but no autoreply is planned to it, and the submission says why
// (autoreply.skipped, with the reason and no address).
func TestAutoreplyNotPlannedToAnInternalHost(t *testing.T) {
	c := autoreplyConfig(t)
	for _, addr := range []string{"ip@[10.0.0.1]", "ip@[127.0.0.1]", "x@localhost", "x@internal", "a@b", "x@nas.local"} {
		res := mustParse(t, c, postForm(form("name", "Ada", "email", addr, "message", "Hi")))
		if res.Submission.Status != outbox.SubmissionAccepted {
			t.Fatalf("%s: stored %s, want accepted", addr, res.Submission.Status)
		}
		if v, _ := res.Submission.Data.Get("email"); v != addr {
			t.Fatalf("%s: stored email %q", addr, v)
		}
		if got := autoreplies(res.Deliveries); len(got) != 0 {
			t.Fatalf("%s: autoreply planned to %q", addr, got[0].Recipient)
		}
		if len(res.Deliveries) != 1 || res.Deliveries[0].Recipient != "sales@example.com" {
			t.Fatalf("%s: deliveries %+v, want the notification only", addr, res.Deliveries)
		}
		var skipped []map[string]string
		for _, ev := range res.Submission.Events {
			if ev.Kind == outbox.EventAutoreplySkipped {
				var d map[string]string
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				skipped = append(skipped, d)
			}
		}
		if len(skipped) != 1 || skipped[0]["route"] != AutoreplyRoute || skipped[0]["reason"] != ReasonRecipientNotPublic || len(skipped[0]) != 2 {
			t.Fatalf("%s: autoreply.skipped events %v, want one with the route and reason only", addr, skipped)
		}
	}
	res := mustParse(t, c, postForm(form("name", "Ada", "email", "ada@example.com", "message", "Hi")))
	if got := autoreplies(res.Deliveries); len(got) != 1 || len(res.Submission.Events) != 0 {
		t.Fatalf("a public address: autoreplies %+v, events %+v", got, res.Submission.Events)
	}
}
