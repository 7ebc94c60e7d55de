package intake

import (
	"strings"
	"testing"
)

func TestEmailLinksToTheInbox(t *testing.T) {
	c := contactConfig(t)
	c.InboxURL = "https://example.com/inbox/"
	res := mustParse(t, c, postForm(form("name", "Ada Lovelace", "email", "ada@example.com", "message", "Hello")))
	link := "https://example.com/inbox/submissions/" + res.Submission.ID.String()
	p := emailPayloads(t, res)[0]
	if !strings.HasSuffix(p.Text, "Open in the inbox: "+link+"\n") {
		t.Errorf("text does not end with the link:\n%s", p.Text)
	}
	if !strings.Contains(p.HTML, `<a href="`+link+`">Open in the inbox</a>`) {
		t.Errorf("HTML lacks the link:\n%s", p.HTML)
	}
}

func TestContentLinkSendsNoVisitorData(t *testing.T) {
	c := contactConfig(t)
	c.InboxURL = "https://example.com/inbox"
	c.Routes[0].Content = ContentLink
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("name", "Ada Lovelace", "email", "ada@example.com", "message", "secret plans", "_replyto", "reply@example.com")))
	p := emailPayloads(t, res)[0]
	for _, visitor := range []string{"Ada", "ada@example.com", "secret plans", "reply@example.com"} {
		for part, s := range map[string]string{"subject": p.Subject, "text": p.Text, "html": p.HTML, "reply-to": p.ReplyTo} {
			if strings.Contains(s, visitor) {
				t.Errorf("%s carries visitor data %q: %q", part, visitor, s)
			}
		}
	}
	link := "https://example.com/inbox/submissions/" + res.Submission.ID.String()
	if p.Subject != "New submission to form contact" || !strings.Contains(p.Text, link) || !strings.Contains(p.HTML, link) {
		t.Errorf("link email = %+v", p)
	}
}

func TestContentLinkNeedsAnInboxURL(t *testing.T) {
	c := contactConfig(t)
	c.Routes[0].Content = ContentLink
	err := c.Provision()
	if err == nil || !strings.Contains(err.Error(), "content link needs inbox_url") {
		t.Fatalf("provision = %v, want an error asking for inbox_url", err)
	}
}
