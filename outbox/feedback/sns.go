package feedback

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// SNSConfig configures the SES-through-SNS receiver.
type SNSConfig struct {
	// TopicARNs are the topics accepted. Required: an SNS signature proves only that SNS
	// sent the message, and any AWS account can make a topic that posts here.
	TopicARNs []string
	// CertHost is the pattern the signing certificate's and SubscribeURL's host must
	// match. Default DefaultCertHost.
	CertHost *regexp.Regexp
	// Client fetches certificates and confirms subscriptions. Default: 10s timeout, no
	// redirects. Tests point it at a local fake.
	Client *http.Client
	// MaxAge refuses messages whose Timestamp is older. Default 1h: SNS's retries of an
	// HTTP delivery fit well within it, a captured message replayed later does not.
	MaxAge time.Duration
}

// DefaultSNSMaxAge is SNSConfig.MaxAge's default.
const DefaultSNSMaxAge = time.Hour

// clockSkew is how far in the future a message's timestamp may be.
const clockSkew = 5 * time.Minute

// snsMessage is the JSON envelope SNS posts to HTTP(S) subscribers.
type snsMessage struct {
	Type             string
	MessageID        string `json:"MessageId"`
	Token            string
	TopicArn         string
	Subject          string
	Message          string
	Timestamp        string
	SignatureVersion string
	Signature        string
	SigningCertURL   string
	SubscribeURL     string
}

// stringToSign is the canonical text SNS signs: selected fields as "Name\nvalue\n" in
// this order; Subject only when present.
func (m *snsMessage) stringToSign() (string, error) {
	var fields [][2]string
	switch m.Type {
	case "Notification":
		fields = [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}}
		if m.Subject != "" {
			fields = append(fields, [2]string{"Subject", m.Subject})
		}
		fields = append(fields, [][2]string{{"Timestamp", m.Timestamp}, {"TopicArn", m.TopicArn}, {"Type", m.Type}}...)
	case "SubscriptionConfirmation", "UnsubscribeConfirmation":
		fields = [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}, {"SubscribeURL", m.SubscribeURL},
			{"Timestamp", m.Timestamp}, {"Token", m.Token}, {"TopicArn", m.TopicArn}, {"Type", m.Type}}
	default:
		return "", fmt.Errorf("unknown SNS message type %q", m.Type)
	}
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f[0])
		b.WriteByte('\n')
		b.WriteString(f[1])
		b.WriteByte('\n')
	}
	return b.String(), nil
}

type snsReceiver struct {
	cfg   SNSConfig
	certs *certCache
	now   func() time.Time
}

func newSNSReceiver(cfg SNSConfig, now func() time.Time) (*snsReceiver, error) {
	if len(cfg.TopicARNs) == 0 {
		return nil, errors.New("sns: at least one topic ARN is required")
	}
	for _, arn := range cfg.TopicARNs {
		if !strings.HasPrefix(arn, "arn:") {
			return nil, fmt.Errorf("sns: topic %q is not an ARN", arn)
		}
	}
	if cfg.CertHost == nil {
		cfg.CertHost = DefaultCertHost
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: noRedirects}
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultSNSMaxAge
	}
	return &snsReceiver{
		cfg:   cfg,
		now:   now,
		certs: &certCache{host: cfg.CertHost, client: cfg.Client, now: now, certs: map[string]*x509.Certificate{}},
	}, nil
}

// parse decodes and authenticates an SNS envelope: well-formed, from an accepted topic,
// fresh, and signed by the certificate at an allowed SNS URL.
func (s *snsReceiver) parse(ctx context.Context, body []byte) (*snsMessage, error) {
	var m snsMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, refuse(http.StatusBadRequest, "malformed SNS message", err)
	}
	if m.Type == "" || m.MessageID == "" || m.TopicArn == "" || m.Signature == "" || m.SigningCertURL == "" {
		return nil, refuse(http.StatusBadRequest, "malformed SNS message", errors.New("missing fields"))
	}
	text, err := m.stringToSign()
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "malformed SNS message", err)
	}
	var hash crypto.Hash
	switch m.SignatureVersion {
	case "1":
		hash = crypto.SHA1
	case "2":
		hash = crypto.SHA256
	default:
		return nil, refuse(http.StatusUnauthorized, "unsupported SNS signature version", nil)
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return nil, refuse(http.StatusUnauthorized, "invalid SNS signature", err)
	}
	cert, err := s.certs.get(ctx, m.SigningCertURL)
	if err != nil {
		return nil, err
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, refuse(http.StatusUnauthorized, "invalid SNS signature", errors.New("certificate key is not RSA"))
	}
	if err := rsa.VerifyPKCS1v15(pub, hash, digest(hash, text), sig); err != nil {
		return nil, refuse(http.StatusUnauthorized, "invalid SNS signature", err)
	}
	// Signed fields are trusted from here on.
	if !slices.Contains(s.cfg.TopicARNs, m.TopicArn) {
		return nil, refuse(http.StatusForbidden, "SNS topic not accepted here", nil)
	}
	ts, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "malformed SNS timestamp", err)
	}
	if now := s.now(); now.Sub(ts) > s.cfg.MaxAge || ts.Sub(now) > clockSkew {
		return nil, refuse(http.StatusUnauthorized, "stale SNS message", nil)
	}
	return &m, nil
}

func digest(h crypto.Hash, text string) []byte {
	if h == crypto.SHA1 {
		d := sha1.Sum([]byte(text))
		return d[:]
	}
	d := sha256.Sum256([]byte(text))
	return d[:]
}

// confirm visits a (verified) SubscribeURL, which is how an SNS subscription is
// confirmed; the URL must be https on an allowed SNS host like the certificate's.
func (s *snsReceiver) confirm(ctx context.Context, m *snsMessage) error {
	u, err := checkSNSURL(m.SubscribeURL, s.cfg.CertHost, false)
	if err != nil {
		return refuse(http.StatusBadRequest, "SubscribeURL not allowed", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return refuse(http.StatusBadRequest, "SubscribeURL not allowed", err)
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return refuse(http.StatusBadGateway, "confirm SNS subscription", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxCertSize))
	if resp.StatusCode != http.StatusOK {
		return refuse(http.StatusBadGateway, "confirm SNS subscription", fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	return nil
}
