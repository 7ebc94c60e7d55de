// Package ses sends email through Amazon SES v2 (sesv2.SendEmail: Simple content, or Raw
// MIME for an email with attachments). The
// SDK's own retries are off: one Send is exactly one HTTP request, and the outbox decides
// when to try again, with what backoff, and whether to fail over to the next provider.
package ses

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/formoutbox/caddy-form-outbox/providers"
	"github.com/formoutbox/caddy-form-outbox/providers/internal/mimemsg"
)

// DefaultTimeout bounds one SendEmail call. Past it the request may have been accepted,
// so a timeout after the request was written is Ambiguous.
const DefaultTimeout = 30 * time.Second

// DefaultRate is SES's default sending quota for an account out of the sandbox, 14
// messages a second: sends are paced to it (providers/ratelimit) unless configured.
const DefaultRate = "14/s"

// DefaultTagName names the EmailTag that carries the delivery id, so SES event
// destinations (bounces, complaints) can be traced back to the outbox row.
const DefaultTagName = "outbox_id"

// Config configures the SES provider.
type Config struct {
	// From is the verified sender; visitors only ever reach Reply-To.
	From string
	// Region, e.g. eu-west-1. Empty: the default chain's (AWS_REGION, shared config).
	Region string
	// Endpoint overrides the SES endpoint (an emulator, a test fake); empty: AWS's.
	Endpoint string
	// AccessKeyID and SecretAccessKey are explicit credentials; both empty: the default
	// AWS credential chain (environment, shared files, instance/task role).
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// ConfigurationSet is sent as ConfigurationSetName when set.
	ConfigurationSet string
	// TagName is the EmailTag carrying the delivery id; default DefaultTagName.
	TagName string
	// Timeout bounds one send; default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests; default the SDK's.
	HTTPClient *http.Client
}

// Provider sends email through SES v2.
type Provider struct {
	client  *sesv2.Client
	from    string
	cfgSet  string
	tagName string
	timeout time.Duration
}

// New checks cfg and builds the client. It makes no network call: the default
// credential chain is only consulted at the first send.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if _, err := mail.ParseAddress(cfg.From); err != nil || providers.CheckHeaders(providers.Message{To: cfg.From}) != nil {
		return nil, fmt.Errorf("ses: from %q is not a single email address", cfg.From)
	}
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, errors.New("ses: access_key_id and secret_access_key go together")
	}
	opts := []func(*config.LoadOptions) error{
		// The outbox owns retries: an SDK retry inside one attempt would hide throttling
		// from the failover logic and multiply requests per attempt.
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ses: load AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("ses: no region: set `region` or AWS_REGION")
	}
	client := sesv2.NewFromConfig(awsCfg, func(o *sesv2.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	p := &Provider{client: client, from: cfg.From, cfgSet: cfg.ConfigurationSet, tagName: cfg.TagName, timeout: cfg.Timeout}
	if p.tagName == "" {
		p.tagName = DefaultTagName
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	return p, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "ses" }

// Send implements providers.Provider: one SendEmail request, classified by Classify.
func (p *Provider) Send(ctx context.Context, m providers.Message) (providers.Result, error) {
	res := providers.Result{Provider: p.Name()}
	in, perr := p.input(m)
	if perr != nil {
		return res, perr
	}
	sctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	sctx, wrote := providers.TrackWrite(sctx)
	out, err := p.client.SendEmail(sctx, in)
	if err != nil {
		return res, Classify(ctx, wrote(), err)
	}
	res.MessageID = aws.ToString(out.MessageId)
	return res, nil
}

// input builds the SendEmail request: the configured From, the visitor only in
// Reply-To, a text part always and an HTML part when there is one. The header values
// follow providers/headers.go; SES encodes and folds the Subject itself.
func (p *Provider) input(m providers.Message) (*sesv2.SendEmailInput, *providers.Error) {
	m, perr := providers.PrepareHeaders(m)
	if perr != nil {
		return nil, perr
	}
	to, err := mail.ParseAddressList(m.To)
	if err != nil || len(to) == 0 {
		return nil, &providers.Error{Class: providers.Permanent, Code: "bad_recipient", Err: errors.New("recipient is not an email address")}
	}
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(cmp.Or(m.From, p.from)),
		Destination:      &types.Destination{ToAddresses: addresses(to)},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(providers.APIText(m.Subject)), Charset: aws.String("UTF-8")},
			Body:    &types.Body{Text: &types.Content{Data: aws.String(m.Text), Charset: aws.String("UTF-8")}},
		}},
		EmailTags: []types.MessageTag{{Name: aws.String(p.tagName), Value: aws.String(m.ID)}},
	}
	if m.HTML != "" {
		in.Content.Simple.Body.Html = &types.Content{Data: aws.String(m.HTML), Charset: aws.String("UTF-8")}
	}
	if len(m.Attachments) > 0 {
		// Simple content has no attachments: the whole message goes as raw MIME, built
		// as the SMTP and file providers build it (providers/internal/mimemsg).
		from, err := mimemsg.ParseFrom(cmp.Or(m.From, p.from))
		if err != nil {
			return nil, &providers.Error{Class: providers.Permanent, Code: "bad_from", Err: err}
		}
		built, err := mimemsg.Build(from, m, time.Now())
		if err != nil {
			return nil, &providers.Error{Class: providers.Permanent, Code: "bad_message", Err: err}
		}
		// Reply-To travels in the raw message's headers.
		in.Content = &types.EmailContent{Raw: &types.RawMessage{Data: built.Raw}}
	}
	if m.ReplyTo != "" && in.Content.Raw == nil {
		rt, err := mail.ParseAddressList(m.ReplyTo)
		if err != nil {
			return nil, &providers.Error{Class: providers.Permanent, Code: "bad_reply_to", Err: errors.New("reply-to is not an email address")}
		}
		in.ReplyToAddresses = addresses(rt)
	}
	if p.cfgSet != "" {
		in.ConfigurationSetName = aws.String(p.cfgSet)
	}
	return in, nil
}

func addresses(as []*mail.Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = providers.FormatAddress(a)
	}
	return out
}

var _ providers.Provider = (*Provider)(nil)
