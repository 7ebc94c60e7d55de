package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
	"github.com/formoutbox/caddy-form-outbox/providers/chat"
)

// hostileName and hostileMessage try every channel's markup: HTML tags and an attribute
// break-out for Telegram, <!channel> and a <url|link> for Slack, @everyone and a masked
// link for Discord and Teams.
const (
	hostileName    = `<b>Eve</b> & <!channel> @everyone [x](https://evil.example)`
	hostileMessage = `</pre><a href="https://evil.example">win</a>`
)

// chatTextOf is the message text a stored chat body carries, wherever its channel puts it.
func chatTextOf(t *testing.T, ch outbox.Channel, body []byte) string {
	t.Helper()
	var m struct {
		Text   string `json:"text"`
		Blocks []struct {
			Text struct{ Text string } `json:"text"`
		} `json:"blocks"`
		Content         string `json:"content"`
		AllowedMentions *struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
		Attachments []struct {
			Content struct {
				Body []struct{ Text string } `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s body %s: %v", ch, body, err)
	}
	switch ch {
	case outbox.ChannelTelegram:
		return m.Text
	case outbox.ChannelSlack:
		if len(m.Blocks) != 1 {
			t.Fatalf("slack blocks %s", body)
		}
		return m.Blocks[0].Text.Text
	case outbox.ChannelDiscord:
		if m.AllowedMentions == nil || m.AllowedMentions.Parse == nil || len(m.AllowedMentions.Parse) != 0 {
			t.Fatalf("discord allowed_mentions is not {\"parse\":[]}: %s", body)
		}
		return m.Content
	default:
		if len(m.Attachments) != 1 || len(m.Attachments[0].Content.Body) != 1 {
			t.Fatalf("teams card %s", body)
		}
		return m.Attachments[0].Content.Body[0].Text
	}
}

func chatTemplateRoute(ch outbox.Channel, file string) Route {
	r := Route{Channel: ch, Text: "testdata/templates/" + file}
	if ch == outbox.ChannelTelegram {
		r.ChatID, r.Token = "-100123", "123:SECRET-TOKEN"
	} else {
		r.URL = "https://hooks.example.com/" + string(ch) + "/secretpart"
	}
	return r
}

// TestChatTemplatesEscapeValuesOnEveryStore: each channel's `text` template is sent with
// its own markup as written and every submitted value escaped for the target, so no
// value adds a tag, a mention or a link; the inbox link prints as a working link; the
// stored payload is the rendered body, on SQLite and PostgreSQL.
func TestChatTemplatesEscapeValuesOnEveryStore(t *testing.T) {
	const inbox = "https://admin.example.com/inbox"
	cases := []struct {
		ch   outbox.Channel
		file string
		want func(link string) string
	}{
		{outbox.ChannelTelegram, "telegram.html", func(link string) string {
			return "<b>Lead from \u2068" + `&lt;b&gt;Eve&lt;/b&gt; &amp; &lt;!channel&gt; @everyone [x](https://evil.example)` + "\u2069</b> <i>sales</i>" + "\n" +
				"<pre>\u2068" + `&lt;/pre&gt;&lt;a href=&quot;https://evil.example&quot;&gt;win&lt;/a&gt;` + "\u2069</pre>" + "\n" +
				`<a href="` + link + `">Open</a>` + "\n"
		}},
		{outbox.ChannelSlack, "slack.txt", func(link string) string {
			return "*Lead from \u2068" + `&lt;b&gt;Eve&lt;/b&gt; &amp; &lt;!channel&gt; @everyone [x](https://evil.example)` + "\u2069*" + "\n" +
				"> \u2068" + `&lt;/pre&gt;&lt;a href="https://evil.example"&gt;win&lt;/a&gt;` + "\u2069" + "\n" +
				`<` + link + `|Open in the inbox>` + "\n"
		}},
		{outbox.ChannelDiscord, "discord.md", func(link string) string {
			return "**Lead from \u2068" + `\<b\>Eve\</b\> & \<!channel\> \@everyone \[x\]\(https\://evil\.example\)` + "\u2069**" + "\n" +
				"\u2068" + `\</pre\>\<a href="https\://evil\.example"\>win\</a\>` + "\u2069" + "\n" +
				`[Open](<` + link + `>)` + "\n"
		}},
		{outbox.ChannelTeams, "teams.md", func(link string) string {
			return "**Lead from \u2068" + `\<b\>Eve\</b\> \& \<\!channel\> @everyone \[x\]\(https://evil\.example\)` + "\u2069**" + "\n\n" +
				"\u2068" + `\</pre\>\<a href="https://evil\.example"\>win\</a\>` + "\u2069" + "\n\n" +
				`[Open](` + link + `)` + "\n"
		}},
	}
	for name, open := range storetest.Stores() {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			for _, tc := range cases {
				c := &Config{Form: "contact", InboxURL: inbox, IPHashKey: []byte("k"), Routes: []Route{chatTemplateRoute(tc.ch, tc.file)}}
				if err := c.Provision(); err != nil {
					t.Fatalf("%s: %v", tc.ch, err)
				}
				res := mustParse(t, c, postForm(form("name", hostileName, "topic", "sales", "message", hostileMessage)))
				if _, err := outbox.Accept(context.Background(), store, res.Submission, res.Deliveries); err != nil {
					t.Fatal(err)
				}
				ds, err := store.ListDeliveries(context.Background(), res.Submission.ID)
				if err != nil || len(ds) != 1 {
					t.Fatalf("%s deliveries %+v, %v", tc.ch, ds, err)
				}
				want := tc.want(inbox + "/submissions/" + res.Submission.ID.String())
				if got := chatTextOf(t, tc.ch, payloadOf(t, ds[0]).Body); got != want {
					t.Errorf("%s text\n got %q\nwant %q", tc.ch, got, want)
				}
				if strings.Contains(string(ds[0].Payload), "SECRET-TOKEN") {
					t.Errorf("%s payload holds the bot token", tc.ch)
				}
			}
		})
	}
}

// TestChatTemplateCutKeepsTheMarkup: a value too long for Telegram's limit is cut, the
// template's closing </pre> and link survive (an unclosed tag would make Telegram refuse
// the message), and a note says it was cut.
func TestChatTemplateCutKeepsTheMarkup(t *testing.T) {
	c := &Config{Form: "contact", InboxURL: "https://admin.example.com/inbox", IPHashKey: []byte("k"),
		Routes: []Route{chatTemplateRoute(outbox.ChannelTelegram, "telegram.html")}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, c, postForm(form("name", "Ada", "message", strings.Repeat("<&>", 2000))))
	text := chatTextOf(t, outbox.ChannelTelegram, payloadOf(t, res.Deliveries[0]).Body)
	link := "https://admin.example.com/inbox/submissions/" + res.Submission.ID.String()
	if n := chat.UTF16Len(text); n > 4096 {
		t.Fatalf("text is %d long, over 4096", n)
	}
	if !strings.HasPrefix(text, "<b>Lead from \u2068Ada\u2069</b>\n<pre>\u2068&lt;&amp;&gt;") ||
		!strings.Contains(text, ";\u2069</pre>\n<a href=\""+link+"\">Open</a>\n") ||
		!strings.HasSuffix(text, "<i>[cut to fit Telegram's 4096-character limit; the whole submission is stored]</i>") {
		t.Fatalf("cut text %q", text)
	}
}

func TestChatTemplateProvisionErrors(t *testing.T) {
	for _, tc := range []struct {
		route Route
		want  string
	}{
		{chatTemplateRoute(outbox.ChannelSlack, "broken.txt"), "notify slack: text: template: testdata/templates/broken.txt:2:"},
		{chatTemplateRoute(outbox.ChannelTelegram, "missing.html"), "notify telegram: text: open testdata/templates/missing.html: no such file"},
		{chatTemplateRoute(outbox.ChannelDiscord, "toolong.md"), "notify discord: text: discord: the template's own text is 2180 long, over the limit of 2000"},
		{Route{Channel: outbox.ChannelEmail, To: []string{"a@example.com"}, Text: "testdata/templates/slack.txt"},
			"text is for chat routes"},
	} {
		c := &Config{Form: "f", Routes: []Route{tc.route}}
		if err := c.Provision(); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secretpart") {
			t.Errorf("provision: %v, want %q", err, tc.want)
		}
	}
}

// TestTemplateFailingOnAPostIsRecorded: a template that ran on the sample at provision
// but fails on one post (here, only when topic is x) leaves the lead going out with the
// built-in message, and the failure is recorded as a template.failed event naming the
// route, the option and the file, and logged at WARN, neither with a submitted value.
func TestTemplateFailingOnAPostIsRecorded(t *testing.T) {
	s := openRealStore(t)
	c := &Config{Form: "contact", IPHashKey: []byte("k"), Routes: []Route{
		{Name: "sales", Channel: outbox.ChannelEmail, To: []string{"sales@example.com"}, BodyText: "testdata/templates/failsonx.txt"},
		{Name: "chat", Channel: outbox.ChannelSlack, URL: slackURL, Text: "testdata/templates/failsonx.txt"},
	}}
	if err := c.Provision(); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	w := httptest.NewRecorder()
	c.serveSubmission(w, postForm(form("topic", "x", "message", "Visitor-Secret-Words")), s.acc, zap.New(core), testNow)
	if w.Code != 200 {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	evs, err := s.ListEvents(context.Background(), outbox.EventTemplateFailed, 10)
	if err != nil || len(evs) != 2 {
		t.Fatalf("template.failed events %+v, %v; want 2", evs, err)
	}
	for i, want := range []string{`{"route":"sales","option":"body_text","template":"testdata/templates/failsonx.txt","error":"template: testdata/templates/failsonx.txt:2:`,
		`{"route":"chat","option":"text","template":"testdata/templates/failsonx.txt","error":"template: testdata/templates/failsonx.txt:2:`} {
		// ListEvents gives the newest first; both were written in one transaction.
		d := string(evs[len(evs)-1-i].Data)
		if !strings.HasPrefix(d, want) || strings.Contains(d, "Visitor-Secret") {
			t.Errorf("event %d data %s, want it to start %s", i, d, want)
		}
	}
	ds, err := s.ListDeliveries(context.Background(), evs[0].SubmissionID)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries %+v, %v", ds, err)
	}
	for _, d := range ds {
		p := payloadOf(t, d)
		if d.Status != outbox.DeliveryPending || !strings.Contains(p.Text+string(p.Body), "Visitor-Secret-Words") {
			t.Errorf("%s: status %s, payload %s; want pending with the built-in message", d.Route, d.Status, d.Payload)
		}
	}
	warns := logs.FilterMessage("template failed; the built-in message was sent instead").All()
	if len(warns) != 2 || warns[0].Level != zap.WarnLevel || warns[0].ContextMap()["template"] != "testdata/templates/failsonx.txt" {
		t.Fatalf("warnings %+v", warns)
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "Visitor-Secret") {
			t.Errorf("log %q holds a submitted value: %v", e.Message, e.ContextMap())
		}
	}
}

// TestChatTemplateValueCannotMoveTheMarks: a value carrying the private-use marks is
// printed with them replaced, so it stays one Text part and never becomes Markup.
func TestChatTemplateValueCannotMoveTheMarks(t *testing.T) {
	tmpl, err := parseChatTemplate("t.txt", `<b>{{field "name"}}</b>`)
	if err != nil {
		t.Fatal(err)
	}
	d := ChatTemplateData{Fields: outbox.Fields{{Name: "name", Value: "a" + valueClose + "<i>x</i>" + valueOpen + "b"}}}
	parts, err := renderChatTemplate(tmpl, d, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.Part{{Markup: "<b>", Text: "a\uFFFD<i>x</i>\uFFFDb"}, {Markup: "</b>"}}
	if fmt.Sprint(parts) != fmt.Sprint(want) {
		t.Fatalf("parts %q, want %q", parts, want)
	}
}
