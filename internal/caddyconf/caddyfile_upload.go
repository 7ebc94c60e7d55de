package caddyconf

import (
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"

	"github.com/formoutbox/caddy-form-outbox/intake"
)

// parseFileField reads the rest of a `field NAME file ...` line (docs/caddyfile.md,
// "File uploads"):
//
//	field NAME file [required] [max_size SIZE] [max_files N] [types TYPE...]
//
// `types` takes every argument after it, so it comes last.
func parseFileField(d *caddyfile.Dispenser, f intake.FieldSpec) (intake.FieldSpec, error) {
	f.File = true
	for d.NextArg() {
		switch opt := d.Val(); opt {
		case "required":
			f.Required = true
		case "max_size":
			if !d.NextArg() {
				return f, d.Errf("field %s: max_size needs a size such as 5MB", f.Name)
			}
			n, err := humanize.ParseBytes(d.Val())
			if err != nil || n == 0 || n > 1<<40 {
				return f, d.Errf("field %s: max_size %q is not a size like 5MB or 2MiB", f.Name, d.Val())
			}
			f.MaxFileSize = int64(n)
		case "max_files":
			n, err := positiveIntArg(d)
			if err != nil {
				return f, err
			}
			f.MaxFiles = n
		case "types":
			for d.NextArg() {
				f.Types = append(f.Types, d.Val())
			}
			if len(f.Types) == 0 {
				return f, d.Errf("field %s: types needs at least one media type, such as application/pdf", f.Name)
			}
		default:
			return f, d.Errf("field %s: unknown option %q for a file field (want required, max_size SIZE, max_files N or types TYPE...)", f.Name, opt)
		}
	}
	if err := f.Check(); err != nil {
		return f, d.Err(err.Error())
	}
	return f, nil
}

// parseFilesURL reads the global `files_url URL [TTL]`.
func parseFilesURL(d *caddyfile.Dispenser, a *App) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	v := d.Val()
	if err := CheckFilesURL(v); err != nil {
		return d.Errf("files_url %v", err)
	}
	a.FilesURL = strings.TrimRight(v, "/")
	if d.NextArg() {
		ttl, err := caddy.ParseDuration(d.Val())
		if err != nil || ttl <= 0 {
			return d.Errf("files_url: %q is not a duration like 72h", d.Val())
		}
		a.FilesURLTTL = caddy.Duration(ttl)
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// CheckFilesURL accepts what inbox_url accepts (intake.CheckInboxURL): an absolute
// http(s) URL without query or fragment, since it goes into messages read elsewhere.
func CheckFilesURL(v string) error {
	if intake.CheckInboxURL(v) != nil {
		return fmt.Errorf("%q: want an absolute http(s) URL without query, such as https://example.com/files", v)
	}
	return nil
}
