package inbox

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/sqlitestore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

var now = time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

const sessionCookie = "test-session-token-0123456789abcdef"

type fixture struct {
	t     *testing.T
	store *sqlitestore.Store
	h     *Handler
	woken int
}

func newFixture(t *testing.T, forms ...string) *fixture {
	t.Helper()
	st := storetest.OpenSQLite(t).(*sqlitestore.Store)
	f := &fixture{t: t, store: st}
	h, err := New(Config{Store: st, BasePath: "/inbox", Forms: forms, Title: "Example Ltd — forms",
		Now: func() time.Time { return now }, Wake: func(context.Context) { f.woken++ }})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// accept stores a submission of form with one e-mail delivery due at now.
func (f *fixture) accept(form string, opts ...storetest.SubmissionOption) (*outbox.Submission, outbox.Delivery) {
	f.t.Helper()
	sub := storetest.NewSubmission(form, append([]storetest.SubmissionOption{storetest.WithCreatedAt(now.Add(-time.Hour))}, opts...)...)
	d := storetest.NewDelivery(sub, "email", "sales@example.com")
	storetest.MustAccept(f.t, f.store, sub, d)
	return sub, d
}

// kill makes every due delivery dead, as the worker does after a permanent error.
func (f *fixture) kill() {
	f.t.Helper()
	ctx := context.Background()
	ds, err := f.store.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 100, Lease: time.Minute, Now: now})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, d := range ds {
		err := outbox.CompleteOne(ctx, f.store, outbox.Completion{DeliveryID: d.ID, LeaseToken: d.LeaseToken,
			Status: outbox.DeliveryDead, LastError: "550 no such user", Provider: "fake", Now: now,
			Attempt: outbox.Attempt{DeliveryID: d.ID, Attempt: d.Attempts, Provider: "fake", StartedAt: now,
				FinishedAt: now, Outcome: outbox.OutcomePermanent, Error: "550 no such user"}})
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) status(id outbox.Delivery) outbox.DeliveryStatus {
	f.t.Helper()
	d, err := f.store.GetDelivery(context.Background(), id.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return d.Status
}

// do serves one request as user "ops" from this site's browser session.
func (f *fixture) do(method, path string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	f.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, "http://shop.example"+path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	r.AddCookie(&http.Cookie{Name: tokenCookie, Value: sessionCookie})
	if method == http.MethodPost {
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range hdr {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	f.h.Serve(w, r, "ops")
	return w
}

func post(extra ...string) url.Values {
	v := url.Values{tokenField: {sessionCookie}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

func TestAnonymousRequestIsRefused(t *testing.T) {
	f := newFixture(t)
	w := httptest.NewRecorder()
	f.h.Serve(w, httptest.NewRequest("GET", "/inbox/", nil), "")
	if w.Code != http.StatusForbidden {
		t.Fatalf("status = %d, want 403", w.Code)
	}
}

func TestPagesCarryStrictSecurityHeaders(t *testing.T) {
	f := newFixture(t)
	w := f.do("GET", "/inbox/", nil, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d: %s", w.Code, w.Body)
	}
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q allows script or inline style", csp)
	}
	if got := w.Header().Get("Referrer-Policy"); got != "same-origin" {
		t.Errorf("Referrer-Policy = %q", got)
	}
	if strings.Contains(w.Body.String(), "<script") || strings.Contains(w.Body.String(), "style=") {
		t.Errorf("page has inline script or style")
	}
}

func TestVisitorMarkupIsShownAsText(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.accept("contact", storetest.WithFields("name", "<img src=x onerror=alert(1)>", "message", `"><script>alert(2)</script>`))
	for _, path := range []string{"/inbox/submissions/" + sub.ID.String(), "/inbox/submissions?q=" + url.QueryEscape("<img")} {
		w := f.do("GET", path, nil, nil)
		body := w.Body.String()
		if w.Code != http.StatusOK || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s: status %d, escaped value missing:\n%s", path, w.Code, body)
		}
		if strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>alert") {
			t.Errorf("%s: visitor markup reached the page unescaped", path)
		}
	}
}

func TestSearchAndFiltersNarrowTheList(t *testing.T) {
	f := newFixture(t, "contact", "support")
	grace, _ := f.accept("contact", storetest.WithFields("name", "Grace Hopper"))
	ada, _ := f.accept("support", storetest.WithFields("name", "Ada Lovelace"))
	hidden, _ := f.accept("internal", storetest.WithFields("name", "Grace Secret"))
	w := f.do("GET", "/inbox/submissions?q=grace", nil, nil)
	body := w.Body.String()
	if !strings.Contains(body, grace.ID.String()) || strings.Contains(body, ada.ID.String()) || strings.Contains(body, hidden.ID.String()) {
		t.Errorf("search grace: want only %s:\n%s", grace.ID, body)
	}
	w = f.do("GET", "/inbox/submissions?form=internal", nil, nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "does not show the form") {
		t.Errorf("a hidden form: status %d:\n%s", w.Code, w.Body)
	}
	if w := f.do("GET", "/inbox/submissions/"+hidden.ID.String(), nil, nil); w.Code != http.StatusNotFound {
		t.Errorf("a hidden form's submission: status %d, want 404", w.Code)
	}
}

func TestRetryOfDeadDeliveryNamesTheUser(t *testing.T) {
	f := newFixture(t)
	sub, d := f.accept("contact")
	f.kill()
	w := f.do("POST", "/inbox/deliveries/"+d.ID.String()+"/retry", post(), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/inbox/submissions/"+sub.ID.String()+"?done=retried" {
		t.Fatalf("retry: %d %q %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	if st := f.status(d); st != outbox.DeliveryPending {
		t.Errorf("delivery = %s, want pending", st)
	}
	if f.woken != 1 {
		t.Errorf("worker woken %d times, want 1", f.woken)
	}
	page := f.do("GET", "/inbox/submissions/"+sub.ID.String()+"?done=retried", nil, nil).Body.String()
	if !strings.Contains(page, "delivery.retried</code> by <strong class=\"actor\">ops</strong>") {
		t.Errorf("history does not name the user:\n%s", page)
	}
	// Again: the delivery is pending now, so the answer says so and nothing changes.
	if w := f.do("POST", "/inbox/deliveries/"+d.ID.String()+"/retry", post(), nil); w.Code != http.StatusConflict {
		t.Errorf("second retry: status %d, want 409", w.Code)
	}
}

func TestCrossSitePostIsRefusedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	_, d := f.accept("contact")
	f.kill()
	path := "/inbox/deliveries/" + d.ID.String() + "/retry"
	cases := map[string]struct {
		form url.Values
		hdr  map[string]string
	}{
		"cross-site fetch metadata": {post(), map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"same-site is not enough":   {post(), map[string]string{"Sec-Fetch-Site": "same-site"}},
		"foreign origin":            {post(), map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}},
		"no origin at all":          {post(), map[string]string{"Sec-Fetch-Site": ""}},
		"no token":                  {url.Values{}, nil},
		"wrong token":               {url.Values{tokenField: {"x" + sessionCookie}}, nil},
	}
	for name, c := range cases {
		w := f.do("POST", path, c.form, c.hdr)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "nothing was changed") {
			t.Errorf("%s: status %d %s, want 403", name, w.Code, w.Body)
		}
		if st := f.status(d); st != outbox.DeliveryDead {
			t.Fatalf("%s: delivery = %s, want still dead", name, st)
		}
	}
	// The same request from this origin goes through.
	w := f.do("POST", path, post(), map[string]string{"Sec-Fetch-Site": "", "Origin": "http://shop.example"})
	if w.Code != http.StatusSeeOther || f.status(d) != outbox.DeliveryPending {
		t.Errorf("same-origin POST: status %d, delivery %s", w.Code, f.status(d))
	}
}

func TestReleaseSpamAndErase(t *testing.T) {
	f := newFixture(t)
	held, hd := f.accept("contact", storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonOriginRejected))
	if w := f.do("POST", "/inbox/submissions/"+held.ID.String()+"/release", post(), nil); w.Code != http.StatusSeeOther {
		t.Fatalf("release: %d %s", w.Code, w.Body)
	}
	if st := f.status(hd); st != outbox.DeliveryPending {
		t.Errorf("released delivery = %s, want pending", st)
	}
	if w := f.do("POST", "/inbox/submissions/"+held.ID.String()+"/spam", post(), nil); w.Code != http.StatusSeeOther {
		t.Fatalf("spam: %d %s", w.Code, w.Body)
	}
	if st := f.status(hd); st != outbox.DeliverySkipped {
		t.Errorf("spam delivery = %s, want skipped", st)
	}
	// Erase refuses without the confirmation step, then erases with it.
	if w := f.do("POST", "/inbox/submissions/"+held.ID.String()+"/erase", post(), nil); w.Code != http.StatusBadRequest {
		t.Errorf("erase without confirm: %d", w.Code)
	}
	if _, err := f.store.GetSubmission(context.Background(), held.ID); err != nil {
		t.Fatalf("unconfirmed erase erased: %v", err)
	}
	confirm := f.do("GET", "/inbox/submissions/"+held.ID.String()+"/erase", nil, nil).Body.String()
	if !strings.Contains(confirm, `name="confirm" value="erase"`) {
		t.Fatalf("confirmation page lacks the confirm field:\n%s", confirm)
	}
	w := f.do("POST", "/inbox/submissions/"+held.ID.String()+"/erase", post("confirm", "erase"), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/inbox/submissions?done=erased" {
		t.Fatalf("erase: %d %q", w.Code, w.Header().Get("Location"))
	}
	if _, err := f.store.GetSubmission(context.Background(), held.ID); err == nil {
		t.Errorf("submission still there after erase")
	}
	evs, err := f.store.SubmissionEvents(context.Background(), held.ID)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, e := range evs {
		var d struct{ User string }
		_ = json.Unmarshal(e.Data, &d)
		if d.User != "" {
			users = append(users, e.Kind+":"+d.User)
		}
	}
	want := "submission.released:ops submission.marked_spam:ops submission.erased:ops"
	if strings.Join(users, " ") != want {
		t.Errorf("audit trail = %v, want %s", users, want)
	}
}

// A submission quarantined for a schema violation says which fields failed, from the
// schema.violation event intake wrote with it, and its history names them.
func TestSchemaViolationShowsTheFailedFields(t *testing.T) {
	f := newFixture(t)
	sub := storetest.NewSubmission("contact", storetest.WithCreatedAt(now.Add(-time.Hour)),
		storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonSchemaViolation))
	data, err := json.Marshal(outbox.SchemaViolationData{Form: "contact", Errors: []outbox.FieldError{
		{Field: "email", Message: "email must be a valid email address"},
		{Field: "<b>x</b>", Message: "<b>x</b> must be at most 5000 characters"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sub.Events = []outbox.Event{{Kind: outbox.EventSchemaViolation, Data: data}}
	storetest.MustAccept(t, f.store, sub)

	w := f.do("GET", "/inbox/submissions/"+sub.ID.String(), nil, nil)
	body := w.Body.String()
	for _, want := range []string{
		`<h2 id="why-h">Fields that failed</h2>`,
		`<li data-field="email">email must be a valid email address</li>`,
		`<li data-field="&lt;b&gt;x&lt;/b&gt;">&lt;b&gt;x&lt;/b&gt; must be at most 5000 characters</li>`,
		`<code>schema.violation</code> <small>fields email, &lt;b&gt;x&lt;/b&gt;</small>`,
	} {
		if w.Code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("status %d, page lacks %s:\n%s", w.Code, want, body)
		}
	}
	other, _ := f.accept("contact", storetest.WithStatus(outbox.SubmissionQuarantined, outbox.ReasonOriginRejected))
	if page := f.do("GET", "/inbox/submissions/"+other.ID.String(), nil, nil).Body.String(); strings.Contains(page, "Fields that failed") {
		t.Errorf("a submission held for its origin lists failed fields:\n%s", page)
	}
}

// Removing an address from the suppression list takes it off and records who did it: on
// the suppression page and in the history of the submission whose delivery listed it.
func TestSuppressionRemovalNamesTheUser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sub, d := f.accept("contact")
	if err := f.store.AddSuppression(ctx, outbox.Suppression{Address: "sales@example.com", Reason: "bounce",
		DeliveryID: d.ID, CreatedAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	w := f.do("POST", "/inbox/suppressions/remove", post("address", "sales@example.com"), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/inbox/suppressions?done=unlisted" {
		t.Fatalf("remove: %d %q %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	if ok, err := f.store.IsSuppressed(ctx, "sales@example.com"); ok || err != nil {
		t.Errorf("still suppressed (%v)", err)
	}
	page := f.do("GET", "/inbox/suppressions?done=unlisted", nil, nil).Body.String()
	if !strings.Contains(page, `sales@example.com by <strong class="actor">ops</strong>`) {
		t.Errorf("the suppression page does not name who removed the address:\n%s", page)
	}
	page = f.do("GET", "/inbox/submissions/"+sub.ID.String(), nil, nil).Body.String()
	if !strings.Contains(page, `suppression.removed</code> by <strong class="actor">ops</strong> <small>address sales@example.com</small>`) {
		t.Errorf("the submission's history does not name who removed its address:\n%s", page)
	}
	if w := f.do("POST", "/inbox/suppressions/remove", post("address", "sales@example.com"), nil); w.Code != http.StatusNotFound {
		t.Errorf("remove twice: %d, want 404", w.Code)
	}
}

func TestBulkRetryRetriesEveryDeadOfTheFilter(t *testing.T) {
	f := newFixture(t)
	_, c1 := f.accept("contact")
	_, c2 := f.accept("contact")
	_, q1 := f.accept("quote")
	f.kill()
	w := f.do("POST", "/inbox/retry-dead", post("form", "contact"), nil)
	if w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Location"), "done=bulk") || !strings.Contains(w.Header().Get("Location"), "n=2") {
		t.Fatalf("bulk retry: %d %q %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	if f.status(c1) != outbox.DeliveryPending || f.status(c2) != outbox.DeliveryPending {
		t.Errorf("contact deliveries not pending")
	}
	if st := f.status(q1); st != outbox.DeliveryDead {
		t.Errorf("quote delivery = %s, want still dead (outside the filter)", st)
	}
}

func TestExportStreamsTheFilter(t *testing.T) {
	f := newFixture(t)
	a, _ := f.accept("contact", storetest.WithFields("name", "Grace", "note", "a,b \"c\""))
	f.accept("quote")
	w := f.do("POST", "/inbox/export", post("form", "contact", "format", "csv"), nil)
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %v", w.Code, w.Header())
	}
	lines := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
	if len(lines) != 2 || lines[0] != strings.Join(ExportColumns, ",") || !strings.HasPrefix(lines[1], a.ID.String()+",") {
		t.Errorf("csv = %q", w.Body.String())
	}
	w = f.do("POST", "/inbox/export", post("format", "ndjson"), nil)
	if n := strings.Count(w.Body.String(), "\n"); w.Code != http.StatusOK || n != 2 {
		t.Errorf("ndjson: %d, %d lines: %s", w.Code, n, w.Body)
	}
}

// An autoreply.skipped event shows its route and reason, which say why a visitor got no
// reply (intake/recipient.go), without the address.
func TestEventRowShowsWhyAnAutoreplyWasSkipped(t *testing.T) {
	row := newEventRow(outbox.Event{Kind: outbox.EventAutoreplySkipped,
		Data: []byte(`{"route":"autoreply","reason":"recipient_not_public"}`)})
	if row.Note != "route autoreply: recipient_not_public" {
		t.Fatalf("note %q", row.Note)
	}
}

// Zero-width characters and bidi controls in a name are shown as marked escapes, so an
// operator sees that "Ad​a" is not "Ada" and that a name carries U+202E, and each value
// is isolated (<bdi>) from the page's text around it; in the list and on the page.
func TestInvisibleCharactersAreShownVisibly(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.accept("contact", storetest.WithFields("name", "Ad\u200ba\u202e", "message", "hi\ufeff\u2060\u200c\u200d"))
	for path, want := range map[string][]string{
		"/inbox/submissions/" + sub.ID.String(): {"<dd><bdi>Ad⟨U+200B⟩a⟨U+202E⟩</bdi></dd>", "<dd><bdi>hi⟨U+FEFF⟩⟨U+2060⟩⟨U+200C⟩⟨U+200D⟩</bdi></dd>"},
		"/inbox/submissions":                    {"<bdi>Ad⟨U+200B⟩a⟨U+202E⟩</bdi>", "<bdi>hi⟨U+FEFF⟩⟨U+2060⟩⟨U+200C⟩⟨U+200D⟩</bdi>"},
	} {
		w := f.do("GET", path, nil, nil)
		body := w.Body.String()
		shown := html.UnescapeString(body) // html/template writes "+" as &#43;
		for _, s := range want {
			if w.Code != http.StatusOK || !strings.Contains(shown, s) {
				t.Errorf("%s: status %d, %q missing:\n%s", path, w.Code, s, body)
			}
		}
		if strings.ContainsAny(body, "\u200b\u200c\u200d\u2060\ufeff\u202e") {
			t.Errorf("%s: an invisible character reached the page as it is", path)
		}
	}
}

// Each attempt shows the start of the SHA-256 of the body it sent, the full hash on
// hover: which body a receiver got, also after a release rewrote the stored one.
func TestAttemptShowsTheBodyItSent(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.accept("contact")
	ctx := context.Background()
	ds, err := f.store.Claim(ctx, outbox.ClaimParams{Owner: "w", Limit: 1, Lease: time.Minute, Now: now})
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim %d: %v", len(ds), err)
	}
	const sum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	if err := outbox.CompleteOne(ctx, f.store, outbox.Completion{DeliveryID: ds[0].ID, LeaseToken: ds[0].LeaseToken,
		Status: outbox.DeliverySent, Provider: "fake", Now: now,
		Attempt: outbox.Attempt{DeliveryID: ds[0].ID, Provider: "fake", StartedAt: now, FinishedAt: now,
			Outcome: outbox.OutcomeSent, BodySHA256: sum}}); err != nil {
		t.Fatal(err)
	}
	w := f.do("GET", "/inbox/submissions/"+sub.ID.String(), nil, nil)
	if want := ` · body <code title="SHA-256 ` + sum + `">9f86d081884c</code>`; w.Code != http.StatusOK || !strings.Contains(w.Body.String(), want) {
		t.Fatalf("status %d, page lacks %q", w.Code, want)
	}
}

// The overview says how far the off-host backup is behind.
func TestOverviewShowsBackupLine(t *testing.T) {
	f := newFixture(t)
	f.h.cfg.Health = func(context.Context) Health {
		return Health{SpoolOn: true, Backup: "backup failing: 20 submissions not in the bucket yet, the oldest for 3m0s"}
	}
	w := f.do(http.MethodGet, "/inbox/", nil, nil)
	if body := w.Body.String(); w.Code != 200 || !strings.Contains(body, "backup failing: 20 submissions not in the bucket yet, the oldest for 3m0s") {
		t.Fatalf("overview %d:\n%s", w.Code, body)
	}
}
