package formoutbox

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/caddyfile_adapt/*.caddyfiletest")

// adaptSeparator splits a .caddyfiletest file into the Caddyfile and what adapting it
// must give: the indented JSON config, or for error_*.caddyfiletest the exact error.
const adaptSeparator = "\n----------\n"

// TestCaddyfileAdapt adapts every testdata/caddyfile_adapt file the way `caddy adapt` does
// and compares the result with the file's expected part. Run with -update to rewrite the
// expectations, then read the diff.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "caddyfile_adapt", "*.caddyfiletest"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/caddyfile_adapt/*.caddyfiletest files")
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	if adapter == nil {
		t.Fatal("the caddyfile adapter is not registered")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".caddyfiletest")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, ok := strings.Cut(string(raw), adaptSeparator)
			if !ok {
				t.Fatalf("%s: no %q separator line", file, strings.TrimSpace(adaptSeparator))
			}
			wantErr := strings.HasPrefix(name, "error_")

			out, warnings, err := adapter.Adapt([]byte(input+"\n"), nil)
			var got string
			switch {
			case wantErr && err == nil:
				t.Fatalf("adapting succeeded, want an error; got config:\n%s", out)
			case wantErr:
				got = err.Error() + "\n"
			case err != nil:
				t.Fatalf("adapt: %v", err)
			default:
				if len(warnings) > 0 {
					t.Errorf("adapt warnings: %+v", warnings)
				}
				var buf bytes.Buffer
				if err := json.Indent(&buf, out, "", "\t"); err != nil {
					t.Fatalf("indent adapted JSON: %v", err)
				}
				got = buf.String() + "\n"
			}

			if *update {
				if err := os.WriteFile(file, []byte(input+adaptSeparator+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("adapted output differs from %s (run go test -run TestCaddyfileAdapt -update to rewrite it)\n--- got:\n%s\n--- want:\n%s", file, got, want)
			}
		})
	}
}
