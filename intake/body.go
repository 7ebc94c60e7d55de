package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// Content types Parse accepts; listed in the Accept-Post header of a 415.
const (
	typeURLEncoded = "application/x-www-form-urlencoded"
	typeMultipart  = "multipart/form-data"
	typeJSON       = "application/json"
)

var errTooManyFields = errors.New("too many fields")

// readFields reads the bounded body as raw fields in the order the client sent them.
// Values are neither trimmed nor checked here; normalise does that for every format alike.
// A multipart body's files come back in up (nil for the other formats), which the caller
// must close; on an error they are already released.
func (c *Config) readFields(r *http.Request) (fields outbox.Fields, up *uploads, isJSON bool, err error) {
	ct := r.Header.Get("Content-Type")
	mediaType, params, perr := mime.ParseMediaType(ct)
	if ct == "" || perr != nil {
		mediaType = ""
	}
	switch mediaType {
	case typeURLEncoded, typeMultipart, typeJSON:
	default:
		return nil, nil, false, &RequestError{
			Status:  http.StatusUnsupportedMediaType,
			Message: "unsupported content type: send " + typeURLEncoded + ", " + typeMultipart + " or " + typeJSON,
		}
	}
	if r.ContentLength > c.MaxBodyBytes {
		return nil, nil, false, c.tooLarge()
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body := http.MaxBytesReader(nil, r.Body, c.MaxBodyBytes)
	defer body.Close()

	switch mediaType {
	case typeURLEncoded:
		fields, err = c.readURLEncoded(body)
	case typeMultipart:
		up = &uploads{}
		fields, err = c.readMultipart(body, params["boundary"], up)
	default:
		fields, err = c.readJSON(body)
		isJSON = true
	}
	if err != nil {
		up.close()
		var mbe *http.MaxBytesError
		var re *RequestError
		switch {
		case errors.As(err, &mbe):
			return nil, nil, isJSON, c.tooLarge()
		case errors.Is(err, errTooManyFields):
			return nil, nil, isJSON, badRequest("too many fields (at most %d)", c.MaxFields)
		case errors.As(err, &re):
			return nil, nil, isJSON, re
		case errors.Is(err, errUploadTemp):
			return nil, nil, isJSON, err // not the visitor's fault: 503
		default:
			return nil, nil, isJSON, badRequest("malformed body: %v", err)
		}
	}
	return fields, up, isJSON, nil
}

func (c *Config) tooLarge() *RequestError {
	return &RequestError{
		Status:  http.StatusRequestEntityTooLarge,
		Message: fmt.Sprintf("request body too large (at most %d bytes)", c.MaxBodyBytes),
	}
}

// readURLEncoded splits the body itself rather than using url.ParseQuery, whose map loses
// the field order. Only '&' separates pairs; a ';' is part of a value.
func (c *Config) readURLEncoded(body io.Reader) (outbox.Fields, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var out outbox.Fields
	for pair := range strings.SplitSeq(string(raw), "&") {
		if pair == "" {
			continue
		}
		if len(out) >= c.MaxFields {
			return nil, errTooManyFields
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			return nil, badRequest("malformed body: bad escape in a field name")
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			return nil, badRequest("malformed body: bad escape in the value of %q", printable(name))
		}
		out = append(out, outbox.Field{Name: name, Value: value})
	}
	return out, nil
}

// readMultipart reads the text parts as fields and the file parts (a filename in their
// Content-Disposition) into up (upload.go); both count towards MaxFields.
func (c *Config) readMultipart(body io.Reader, boundary string, up *uploads) (outbox.Fields, error) {
	if boundary == "" {
		return nil, badRequest("malformed body: multipart without a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	var out outbox.Fields
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := part.FormName()
		if name == "" {
			return nil, badRequest("malformed body: multipart part without a field name")
		}
		if len(out)+len(up.files) >= c.MaxFields {
			return nil, errTooManyFields
		}
		if part.FileName() != "" {
			f, err := up.receive(part)
			if err != nil {
				return nil, err
			}
			up.files = append(up.files, f)
			continue
		}
		value, err := io.ReadAll(part)
		if err != nil {
			return nil, err
		}
		out = append(out, outbox.Field{Name: name, Value: string(value)})
	}
}

// readJSON accepts one flat object. Numbers keep their exact text and booleans become
// "true"/"false"; null is an empty value. Nested objects and arrays are refused rather
// than flattened, because a notification could not show them faithfully.
func (c *Config) readJSON(body io.Reader) (outbox.Fields, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	// encoding/json silently replaces invalid UTF-8 with U+FFFD; refuse it instead, as
	// the other formats do.
	if !utf8.Valid(raw) {
		return nil, badRequest("body is not valid UTF-8")
	}
	if fields, ok := flatJSON(raw, c.MaxFields); ok {
		return fields, nil
	}
	return c.decodeJSON(raw)
}

// decodeJSON is readJSON's general path, through encoding/json's token stream: it takes
// what flatJSON leaves (\u escapes, nesting, syntax errors, too many fields) and words
// the errors.
func (c *Config) decodeJSON(raw []byte) (outbox.Fields, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := jsonToken(dec)
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, badRequest("JSON body must be an object of fields")
	}
	var out outbox.Fields
	for dec.More() {
		kt, err := jsonToken(dec)
		if err != nil {
			return nil, err
		}
		name, ok := kt.(string)
		if !ok {
			return nil, badRequest("malformed JSON body")
		}
		if len(out) >= c.MaxFields {
			return nil, errTooManyFields
		}
		vt, err := jsonToken(dec)
		if err != nil {
			return nil, err
		}
		var value string
		switch v := vt.(type) {
		case string:
			value = v
		case json.Number:
			value = v.String()
		case bool:
			value = fmt.Sprint(v)
		case nil:
			value = ""
		default:
			return nil, badRequest("field %q: nested objects and arrays are not accepted", printable(name))
		}
		out = append(out, outbox.Field{Name: name, Value: value})
	}
	if _, err := jsonToken(dec); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("malformed JSON body: data after the object")
	}
	return out, nil
}

// jsonToken reads the next token; the body is complete in memory, so running out of
// input means the client sent a truncated document.
func jsonToken(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, badRequest("malformed JSON body: unexpected end")
	}
	if err != nil {
		return nil, badRequest("malformed JSON body: %v", err)
	}
	return tok, nil
}

// printable makes a visitor-supplied name safe to echo in an error message.
func printable(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s), "")
}
