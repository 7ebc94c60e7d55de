package formoutbox

import (
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
