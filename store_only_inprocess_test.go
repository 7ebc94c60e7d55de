package formoutbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// A JSON config's form without routes is refused at provision unless it says
// store_only, as the Caddyfile's is at its line (intake/coverage.go, CheckRouted).
func TestJSONFormWithoutRoutesNeedsStoreOnly(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	validate := func(handler map[string]any) error {
		raw, err := json.Marshal(map[string]any{
			"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
			"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"srv0": map[string]any{
				"listen":          []string{freeAddr(t)},
				"automatic_https": map[string]any{"disable": true},
				"routes":          []any{map[string]any{"handle": []any{handler}}},
			}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var cfg caddy.Config
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		return caddy.Validate(&cfg)
	}
	err := validate(map[string]any{"handler": "form_outbox", "form": "survey"})
	if err == nil || !strings.Contains(err.Error(), "no notify route in form survey") {
		t.Fatalf("validate without routes: %v", err)
	}
	if err := validate(map[string]any{"handler": "form_outbox", "form": "survey", "store_only": true}); err != nil {
		t.Fatalf("validate with store_only: %v", err)
	}
}
