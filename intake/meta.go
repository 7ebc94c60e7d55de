package intake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

const (
	maxUserAgentLength = 512
	maxURLHeaderLength = 1024
	// clientIPHashHex is 128 bits of the HMAC: plenty to tell clients apart.
	clientIPHashHex = 32
)

// meta records where a post came from without keeping the visitor's address: the
// client IP is stored as a keyed hash, which lets an operator group a flood by client
// but cannot be reversed by hashing the IPv4 space without the key.
// `client_ip full` keeps the address itself and `client_ip off` nothing. ipHash is
// c.hashIP(ip), made once by Parse.
func (c *Config) meta(r *http.Request, ip, ipHash string) outbox.Meta {
	m := outbox.Meta{
		Origin:    headerText(r.Header.Get("Origin"), maxURLHeaderLength),
		Referer:   headerText(r.Header.Get("Referer"), maxURLHeaderLength),
		UserAgent: headerText(r.Header.Get("User-Agent"), maxUserAgentLength),
	}
	switch c.ClientIPMode {
	case ClientIPFull:
		m.ClientIP = headerText(ip, maxURLHeaderLength)
	case ClientIPOff:
	default:
		m.ClientIP = ipHash
	}
	return m
}

// clientIP falls back to RemoteAddr when the hook knows nothing (e.g. a request that did
// not pass through the layer that sets it), so the meta never silently loses the client.
func (c *Config) clientIP(r *http.Request) string {
	if c.ClientIP != nil {
		if ip := c.ClientIP(r); ip != "" {
			return ip
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (c *Config) hashIP(ip string) string {
	if ip == "" {
		return ""
	}
	var m hash.Hash
	if c.ipMACs != nil {
		m = c.ipMACs.Get().(hash.Hash)
		defer c.ipMACs.Put(m)
		m.Reset() // back to the keyed state, without hashing the key again
	} else { // not provisioned
		m = hmac.New(sha256.New, c.IPHashKey)
	}
	_, _ = io.WriteString(m, ip)
	var sum [sha256.Size]byte
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], m.Sum(sum[:0]))
	return string(text[:clientIPHashHex])
}

// headerText keeps a header value fit for storage: valid UTF-8, no control
// characters, bounded.
func headerText(v string, max int) string {
	v = strings.ToValidUTF8(v, "")
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, v)
	return truncateRunes(strings.TrimSpace(v), max)
}
