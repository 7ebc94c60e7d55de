package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestRendersAPage proves the launcher works on this machine: Chromium loads a page from
// a loopback server and runs its script; with JavaScript off, the script does not run.
func TestRendersAPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>t</title><p id="p">static</p><script>document.getElementById("p").textContent="scripted"</script>`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		noJS bool
		want string
	}{{false, "scripted"}, {true, "static"}} {
		ctx := New(t, Options{DisableJavaScript: tc.noJS})
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
			t.Fatalf("noJS=%v: navigate: %v", tc.noJS, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#p")))
		if err != nil {
			t.Fatalf("noJS=%v: read the page: %v", tc.noJS, err)
		}
		if got != tc.want {
			t.Errorf("noJS=%v: page shows %q, want %q", tc.noJS, got, tc.want)
		}
	}
}
