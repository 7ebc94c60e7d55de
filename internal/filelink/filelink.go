// Package filelink signs and checks the expiring download links of uploaded files that
// webhooks and chat messages carry when `files_url` is configured (docs/design.md,
// "Files"). A link is BASE/ID?exp=UNIX&sig=MAC, where MAC is the unpadded base64url
// HMAC-SHA256, under the App's key, of the file id and the expiry: whoever holds the
// link may download that one file until it expires, and no one can make a link without
// the key.
package filelink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Errors of Check.
var (
	ErrBadSignature = errors.New("the link's signature does not match")
	ErrExpired      = errors.New("the link has expired")
)

func mac(key []byte, id uuid.UUID, exp int64) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("form_outbox file link\x00"))
	m.Write([]byte(id.String()))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(exp, 10)))
	return m.Sum(nil)
}

// URL returns the link to file id under base, valid until exp.
func URL(key []byte, base string, id uuid.UUID, exp time.Time) string {
	e := exp.Unix()
	q := url.Values{}
	q.Set("exp", strconv.FormatInt(e, 10))
	q.Set("sig", base64.RawURLEncoding.EncodeToString(mac(key, id, e)))
	return strings.TrimRight(base, "/") + "/" + id.String() + "?" + q.Encode()
}

// Check verifies the exp and sig query values of a link to file id at now. Only the
// spelling URL writes is accepted: exp in canonical decimal (no sign, no leading zero, no
// space) and sig in unpadded base64url with nothing around it. strconv.ParseInt takes
// "+EXP" and "0EXP", and the base64 decoder skips line breaks, so without this one link
// had many spellings that all checked; each is refused, even with the original signature.
func Check(key []byte, id uuid.UUID, exp, sig string, now time.Time) error {
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || strconv.FormatInt(e, 10) != exp {
		return ErrBadSignature
	}
	want := base64.RawURLEncoding.EncodeToString(mac(key, id, e))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return ErrBadSignature
	}
	if now.Unix() >= e {
		return ErrExpired
	}
	return nil
}
