package intake

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Uploads (docs/design.md, "Files"): a multipart post's file parts are streamed into
// memory up to uploadMemory bytes for the whole request, and past that into temporary
// files, unlinked as soon as they are made so that no crash can leave one behind. Each
// file's SHA-256, size and sniffed type are taken on the way. The store reads them back
// inside the accept transaction; Result.Close releases them.
const (
	// uploadMemory is how many bytes of file content one request may hold in memory.
	uploadMemory = 256 << 10
	// sniffLength is how much of a file's start its type is judged by (what
	// http.DetectContentType reads).
	sniffLength = 512
	// maxFileNameBytes bounds a sanitised file name.
	maxFileNameBytes = 150
	// DefaultMaxFiles is a file field's max_files when not set.
	DefaultMaxFiles = 1
)

// Types refused unless a field's `types` names them exactly: a browser could run them
// (HTML, SVG, XML), or they are programs (scripts, executables). A wildcard such as
// text/* does not let them in.
var dangerousTypes = []string{
	"text/html", "image/svg+xml", "text/xml", "application/xml", "application/javascript",
	"text/javascript", "text/x-shellscript", "application/x-msdownload", "application/x-elf",
	"application/x-mach-binary",
}

// uploads holds one request's received files until the submission is stored.
type uploads struct {
	files  []outbox.File
	temps  []*os.File
	memory int64 // bytes of content held in memory so far
}

// close releases the temporary files. A temporary file that could not be unlinked when
// it was made (a platform that refuses to remove an open file) is removed now.
func (u *uploads) close() {
	if u == nil {
		return
	}
	for _, f := range u.temps {
		f.Close()
		os.Remove(f.Name()) // already gone where unlinking an open file works
	}
	u.temps = nil
}

// tempContent is a file's content in an unlinked temporary file.
type tempContent struct {
	f    *os.File
	size int64
}

func (t tempContent) Open() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(t.f, 0, t.size)), nil
}

// receive reads one file part: into memory while the request's budget lasts, then into
// a temporary file. The body bound (MaxBytesReader) bounds it; the field's rules are
// applied later (judgeFiles).
func (u *uploads) receive(part *multipart.Part) (outbox.File, error) {
	f := outbox.File{
		Field:        part.FormName(),
		Name:         sanitizeFileName(part.FileName()),
		DeclaredType: declaredType(part.Header.Get("Content-Type")),
		HasContent:   true,
	}
	id, err := uuid.NewV7()
	if err != nil {
		return f, fmt.Errorf("file id: %w", err)
	}
	f.ID = id
	h := sha256.New()
	var mem bytes.Buffer
	room := max(uploadMemory-u.memory, 0)
	n, err := io.Copy(io.MultiWriter(&mem, h), io.LimitReader(part, room+1))
	if err != nil {
		return f, err
	}
	if n <= room {
		u.memory += n
		f.Size = n
		f.Content = outbox.BytesContent(mem.Bytes())
		f.SniffedType = sniff(mem.Bytes())
		f.SHA256 = hex.EncodeToString(h.Sum(nil))
		return f, nil
	}
	tmp, err := u.tempFile()
	if err != nil {
		return f, err
	}
	if _, err := tmp.Write(mem.Bytes()); err != nil {
		return f, fmt.Errorf("%w: %w", errUploadTemp, err)
	}
	rest, err := io.Copy(io.MultiWriter(tmp, h), part)
	var pe *os.PathError
	if errors.As(err, &pe) {
		return f, fmt.Errorf("%w: %w", errUploadTemp, err)
	}
	if err != nil {
		return f, err
	}
	f.Size = n + rest
	f.Content = tempContent{f: tmp, size: f.Size}
	// The type from the file's start, which the memory budget may not have held.
	head := make([]byte, min(f.Size, sniffLength))
	if _, err := tmp.ReadAt(head, 0); err != nil {
		return f, fmt.Errorf("%w: %w", errUploadTemp, err)
	}
	f.SniffedType = sniff(head)
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// errUploadTemp is a temporary file that could not be made or written: the server's
// fault, answered 503, never the visitor's.
var errUploadTemp = errors.New("upload temporary file")

func (u *uploads) tempFile() (*os.File, error) {
	tmp, err := os.CreateTemp("", "form_outbox-upload-*")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUploadTemp, err)
	}
	u.temps = append(u.temps, tmp)
	// Unlinked at once: the open file keeps its bytes, and nothing is left on disk when
	// the process dies, however it dies.
	_ = os.Remove(tmp.Name())
	return tmp, nil
}

// declaredType is the media type the client declared, without parameters, or "" when it
// is not one.
func declaredType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || hasControl(mt) || len(mt) > 100 {
		return ""
	}
	return mt
}

// sniff names the type of a file from its first bytes: http.DetectContentType, plus the
// types it cannot tell and a browser or a system would act on (SVG, scripts,
// executables). The declared type plays no part.
func sniff(head []byte) string {
	head = head[:min(len(head), sniffLength)]
	switch {
	case bytes.HasPrefix(head, []byte("MZ")):
		return "application/x-msdownload"
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "application/x-elf"
	case slices.ContainsFunc([]string{"\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe"},
		func(m string) bool { return bytes.HasPrefix(head, []byte(m)) }):
		return "application/x-mach-binary"
	case bytes.HasPrefix(head, []byte("#!")):
		return "text/x-shellscript"
	}
	mt, _, err := mime.ParseMediaType(http.DetectContentType(head))
	if err != nil {
		return "application/octet-stream"
	}
	if (mt == "text/xml" || mt == "text/plain") && bytes.Contains(bytes.ToLower(head), []byte("<svg")) {
		return "image/svg+xml"
	}
	return mt
}

// typeAllowed reports whether a sniffed type passes a field's `types`: an exact entry, or
// a wildcard (image/*) for any type but the dangerous ones; without `types`, every type
// but the dangerous ones.
func typeAllowed(types []string, sniffed string) bool {
	if slices.Contains(types, sniffed) {
		return true
	}
	if slices.Contains(dangerousTypes, sniffed) {
		return false
	}
	if len(types) == 0 {
		return true
	}
	major, _, _ := strings.Cut(sniffed, "/")
	return slices.Contains(types, major+"/*") || slices.Contains(types, "*/*")
}

// sanitizeFileName makes the visitor's file name safe to store, show and send in a
// Content-Disposition header: the last path element only (either slash), without
// control, bidi or format characters, characters Windows refuses, leading dots or
// trailing dots and spaces, cut to maxFileNameBytes keeping the extension. An empty
// result is "file".
func sanitizeFileName(name string) string {
	name = strings.ToValidUTF8(name, "")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r):
			return -1 // controls, and format characters: bidi overrides, zero widths
		case strings.ContainsRune(`<>:"|?*`, r):
			return '_'
		case unicode.IsSpace(r):
			return ' '
		}
		return r
	}, name)
	name = strings.TrimLeft(name, ". ")
	name = strings.TrimRight(name, ". ")
	if len(name) > maxFileNameBytes {
		ext := ""
		if i := strings.LastIndexByte(name, '.'); i > 0 && len(name)-i <= 16 {
			ext = name[i:]
		}
		name = truncateBytes(name[:len(name)-len(ext)], maxFileNameBytes-len(ext)) + ext
	}
	if name == "" {
		return "file"
	}
	return name
}

// truncateBytes cuts s to at most n bytes without splitting a character.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// fileSpec returns the spec of a file field, or nil.
func (c *Config) fileSpec(name string) *FieldSpec {
	for i := range c.Fields {
		if c.Fields[i].Name == name && c.Fields[i].File {
			return &c.Fields[i]
		}
	}
	return nil
}

// judgeFiles applies each file field's rules to the received files, setting Rejected on
// every file that broke one, and returns a violation for each of those, in post order.
func (c *Config) judgeFiles(files []outbox.File) []Violation {
	var out []Violation
	count := map[string]int{}
	for i := range files {
		f := &files[i]
		spec := c.fileSpec(f.Field)
		count[f.Field]++
		var msg string
		switch {
		case spec == nil:
			f.Rejected, msg = outbox.FileNotAFileField, "does not take files"
		case count[f.Field] > spec.maxFiles():
			f.Rejected, msg = outbox.FileTooMany, fmt.Sprintf("takes at most %d files", spec.maxFiles())
		case f.Size == 0:
			f.Rejected, msg = outbox.FileEmpty, fmt.Sprintf("file %q is empty", f.Name)
		case spec.MaxFileSize > 0 && f.Size > spec.MaxFileSize:
			f.Rejected, msg = outbox.FileTooLarge, fmt.Sprintf("file %q is larger than %d bytes", f.Name, spec.MaxFileSize)
		case !typeAllowed(spec.Types, f.SniffedType):
			f.Rejected, msg = outbox.FileTypeNotAllowed, fmt.Sprintf("file %q is %s, which is not accepted", f.Name, f.SniffedType)
		default:
			continue
		}
		out = append(out, Violation{Field: f.Field, Message: f.Field + ": " + msg})
	}
	return out
}

func (f *FieldSpec) maxFiles() int {
	if f.MaxFiles > 0 {
		return f.MaxFiles
	}
	return DefaultMaxFiles
}

// validateFileFields checks what validate cannot see in the data: a required file field
// with no file, and a file field sent as text.
func (c *Config) validateFileFields(data outbox.Fields, files []outbox.File) []Violation {
	var out []Violation
	for _, spec := range c.Fields {
		if !spec.File {
			continue
		}
		if v, _ := data.Get(spec.Name); v != "" {
			out = append(out, Violation{Field: spec.Name, Message: spec.Name + " must be a file upload"})
			continue
		}
		if spec.Required && !slices.ContainsFunc(files, func(f outbox.File) bool { return f.Field == spec.Name }) {
			out = append(out, Violation{Field: spec.Name, Message: spec.Name + " is required"})
		}
	}
	return out
}

// withFileHashes adds each file's field and SHA-256 to data for the content hash, under
// names no form field can have (NUL is refused in names), so the same text with other
// files is other content.
func withFileHashes(data outbox.Fields, files []outbox.File) outbox.Fields {
	if len(files) == 0 {
		return data
	}
	out := slices.Clone(data)
	for _, f := range files {
		out = append(out, outbox.Field{Name: "\x00file\x00" + f.Field, Value: f.SHA256})
	}
	return out
}

// fileRejectedData names the rejected files by id, field and rule, never by the
// visitor's file name.
func fileRejectedData(form string, files []outbox.File) map[string]any {
	var list []map[string]string
	for _, f := range files {
		if f.Rejected != "" {
			list = append(list, map[string]string{"file_id": f.ID.String(), "field": f.Field, "rule": f.Rejected})
		}
	}
	return map[string]any{"form": form, "files": list}
}

// dropEmptyFileFields removes the empty text parts named like a file field: a browser
// sends one for a file input left empty. A non-empty one stays, for validateFileFields.
func (c *Config) dropEmptyFileFields(data outbox.Fields) outbox.Fields {
	return slices.DeleteFunc(data, func(f outbox.Field) bool { return f.Value == "" && c.fileSpec(f.Name) != nil })
}

// attach adds the submission's files to an `attach` route's email, when their total fits
// the route's cap; otherwise the text says why they are not attached. Only files that
// broke no rule and whose content was kept are attached.
func (c *Config) attach(p *outbox.Payload, route Route, sub *outbox.Submission) {
	limit := route.AttachMax
	if limit <= 0 {
		limit = DefaultAttachMax
	}
	var refs []outbox.AttachmentRef
	var total int64
	for _, f := range deliveredFiles(sub) {
		if !f.HasContent {
			continue
		}
		total += f.Size
		refs = append(refs, outbox.AttachmentRef{FileID: f.ID, Name: f.Name, Type: f.SniffedType, Size: f.Size})
	}
	if len(refs) == 0 {
		return
	}
	if total > limit {
		where := "open them in the inbox"
		if c.InboxURL == "" {
			where = "they are kept with the submission"
		}
		p.Text += fmt.Sprintf("\n(The files are not attached: %d bytes in all is over this notification's limit of %d bytes; %s.)\n",
			total, limit, where)
		return
	}
	p.Attachments = refs
}
