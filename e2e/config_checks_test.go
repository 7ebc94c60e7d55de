package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formoutbox/caddy-form-outbox/intake"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/pgstore"
	"github.com/formoutbox/caddy-form-outbox/outbox/storetest"
)

// validate runs `caddy validate` on caddyfile (written into dir) and returns its
// output and whether it succeeded.
func validate(t *testing.T, dir, caddyfile string) (string, bool) {
	t.Helper()
	return runOnCaddyfile(t, dir, caddyfile, nil, "validate")
}

// runOnCaddyfile writes caddyfile into dir and runs the built Caddy with args, the
// Caddyfile's --config and --adapter, and env; it returns the output and whether the
// exit status was 0.
func runOnCaddyfile(t *testing.T, dir, caddyfile string, env []string, args ...string) (string, bool) {
	t.Helper()
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddyBin, append(args, "--config", path, "--adapter", "caddyfile")...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config")), env...)
	out, err := cmd.CombinedOutput()
	// The log is JSON: unquote the quotes, so the tests read messages as an operator does.
	return strings.ReplaceAll(string(out), `\"`, `"`), err == nil
}

const validateGlobal = `{
	admin off
	form_outbox {
		storage sqlite {{DIR}}/forms.db
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
`

// TestValidateRefusesWhatWouldDropANotification: `caddy validate` of the built binary
// refuses a guard or subject naming an undeclared field (with the Caddyfile line, the
// declared fields and the near miss), a template printing one (with the template's file
// and line), and a form with no route; it accepts store_only, and warns of a form
// without declared fields and of guards that leave a case unrouted.
func TestValidateRefusesWhatWouldDropANotification(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := filepath.Join(dir, "lead.txt")
	if err := os.WriteFile(body, []byte("New lead\nFrom: {{field \"nmae\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	global := strings.ReplaceAll(validateGlobal, "{{DIR}}", dir)
	for _, tc := range []struct {
		name, site, want string
	}{
		{"guard typo", `:8080 {
	form_outbox /contact {
		field name required
		field topic
		notify email sales@example.com {
			when field topc is sales
		}
	}
}`, `when: field "topc" is not declared (declared: name, topic); did you mean "topic"?, at ` + filepath.Join(dir, "Caddyfile") + `:16`},
		{"subject typo", `:8080 {
	form_outbox /contact {
		field name required
		notify email sales@example.com {
			subject "New enquiry from {field.nmae}"
		}
	}
}`, `subject: field "nmae" is not declared (declared: name); did you mean "name"?, at ` + filepath.Join(dir, "Caddyfile") + `:15`},
		{"template typo", `:8080 {
	form_outbox /contact {
		field name required
		notify email sales@example.com {
			body_text ` + body + `
		}
	}
}`, `notify email: body_text (template ` + body + `:2:`},
		{"no route", `:8080 {
	form_outbox /contact {
		field name required
	}
}`, "no notify route, so nobody would hear of its posts: add a `notify` line, or `store_only` if keeping posts without notifying anyone is deliberate, at " + filepath.Join(dir, "Caddyfile") + ":12"},
	} {
		out, ok := validate(t, dir, global+tc.site)
		if ok || !strings.Contains(out, tc.want) {
			t.Errorf("%s: validate ok=%v, want an error containing %q; output:\n%s", tc.name, ok, tc.want, out)
		}
	}

	out, ok := validate(t, dir, global+`:8080 {
	form_outbox /survey {
		store_only
	}
	form_outbox /contact {
		notify email sales@example.com {
			when field topic is sales
			subject "From {field.name}"
		}
		notify email support@example.com {
			when field topic is support
		}
	}
}`)
	for _, want := range []string{
		`notify email: when reads field "topic", but form contact declares no fields`,
		`notify email: subject reads field "name", but form contact declares no fields`,
		`form contact: a post where topic is neither sales nor support takes no route and notifies nobody`,
	} {
		if !ok || !strings.Contains(out, want) {
			t.Errorf("validate ok=%v, want a warning containing %q; output:\n%s", ok, want, out)
		}
	}
}

const templateEmptyCaddyfile = `{
	admin 127.0.0.1:{{ADMIN}}
	form_outbox {
		storage {{STORAGE}}
		worker {
			poll_interval 500ms
		}
		email {
			from "Forms <forms@example.com>"
			file {{DIR}}/mail
		}
	}
}
http://127.0.0.1:{{HTTP}} {
	form_outbox /contact {
		form contact
		notify email sales@example.com {
			subject "New enquiry from {field.name}"
		}
	}
}
`

// TestTemplateEmptyThroughCaddy: on SQLite and PostgreSQL, a post without the field the
// subject prints is stored with a template.empty event on its delivery, naming the route,
// option and field (not a value), the metric counts it, and the e-mail still goes out;
// a post with the field adds neither.
func TestTemplateEmptyThroughCaddy(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			storage := "sqlite " + filepath.Join(dir, "forms.db")
			var pc pgstore.Config
			if store == "postgres" {
				pc = storetest.NewPostgresSchemaName(t)
				storage = fmt.Sprintf("postgres %q {\n\t\t\tschema %s\n\t\t}", pc.DSN, pc.Schema)
			}
			p := newCaddy(t, caddyOpts{Dir: dir, Caddyfile: strings.ReplaceAll(templateEmptyCaddyfile, "{{STORAGE}}", storage)})
			if !strings.Contains(p.Log(), `subject reads field \"name\", but form contact declares no fields`) {
				t.Errorf("no load-time warning in the log:\n%s", p.Log())
			}
			p.waitMetric(t, 0, "form_outbox_template_empty_total", "form", "contact", "route", "email")

			id := postAdminForm(t, p, "/contact", url.Values{"message": {"secret words"}})
			postAdminForm(t, p, "/contact", url.Values{"name": {"Ada"}, "message": {"hi"}})
			p.waitMetric(t, 1, "form_outbox_template_empty_total", "form", "contact", "route", "email")
			d := p.waitDelivery(t, id, "sent")

			var events []outbox.Event
			var err error
			if store == "sqlite" {
				events, err = storetest.OpenSQLiteAt(t, filepath.Join(dir, "forms.db")).ListEvents(context.Background(), outbox.EventTemplateEmpty, 10)
			} else {
				events, err = storetest.OpenPostgresAt(t, pc).ListEvents(context.Background(), outbox.EventTemplateEmpty, 10)
			}
			if err != nil || len(events) != 1 {
				t.Fatalf("template.empty events %+v, %v", events, err)
			}
			var te intake.TemplateEmpty
			if err := json.Unmarshal(events[0].Data, &te); err != nil {
				t.Fatal(err)
			}
			want := intake.TemplateEmpty{Form: "contact", Route: "email", Option: "subject", Field: "name", Delivery: d.ID}
			if events[0].SubmissionID.String() != id || events[0].DeliveryID.String() != d.ID || te != want || strings.Contains(string(events[0].Data), "secret") {
				t.Fatalf("event of %s: %s, want %+v for submission %s", events[0].SubmissionID, events[0].Data, want, id)
			}
			if !strings.Contains(p.Log(), `"field":"name"`) {
				t.Errorf("no runtime warning in the log:\n%s", p.Log())
			}
		})
	}
}
