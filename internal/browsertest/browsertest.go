// Package browsertest starts Debian's Chromium, headless, for tests that check what a
// person sees: the inbox pages and the browser client. A machine without Chromium fails
// the test with the command that installs it (./scripts/test installs it when it runs
// as root); only ./scripts/test run by another user, outside CI, skips it and names it
// at the end (internal/prereq).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formoutbox/caddy-form-outbox/internal/prereq"
)

// EnvChromium names a Chromium binary to use instead of the one found on PATH.
const EnvChromium = "FORM_OUTBOX_CHROMIUM"

// Path returns the Chromium binary; when there is none, prereq.Missing stops t.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	prereq.Missing(t, "Chromium (apt-get install -y chromium, or set "+EnvChromium+"); ./scripts/test installs it when run as root")
	return ""
}

// Options change how New starts the browser.
type Options struct {
	// DisableJavaScript starts a browser with scripts off, to test progressive enhancement.
	DisableJavaScript bool
	// Timeout bounds everything done with the returned context (default 60 s).
	Timeout time.Duration
}

// New starts a fresh headless Chromium with an empty profile in t's temporary directory
// and returns a context for chromedp actions in its first tab. The browser is closed
// at t's cleanup. The flags keep Chromium from reaching for the network on its own
// (these machines have none) and let it run as root in a container.
func New(t testing.TB, o Options) context.Context {
	t.Helper()
	profile := filepath.Join(t.TempDir(), "chromium-profile")
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path(t)),
		chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 900),
	}
	if o.DisableJavaScript {
		flags = append(flags, chromedp.Flag("blink-settings", "scriptEnabled=false"))
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), flags...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser now, so a broken Chromium fails here with its own error.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// Screenshot writes a full-page PNG of the current page to path (for the README's
// pictures and for looking at a failure).
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	// Quality 100 is what makes Chromium encode PNG; any other value gives JPEG.
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("screenshot dir: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
}
