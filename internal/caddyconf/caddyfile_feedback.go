package caddyconf

import (
	"regexp"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// ParseFeedback reads the feedback handler's directive into fh:
//
//	form_outbox_feedback [MATCHER] {
//		sns {
//			topic_arn ARN...                   # required, repeatable: the accepted topics
//			cert_host PATTERN                  # default ^sns\.[a-z0-9-]+\.amazonaws\.com$
//		}
//		resend {
//			secret SECRET                      # whsec_...; placeholders like {env.X} allowed
//		}
//		suppress on|off                        # default on
//	}
func ParseFeedback(d *caddyfile.Dispenser, fh *Feedback) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "sns":
			if d.NextArg() || fh.SNS != nil {
				return d.Errf("sns takes a block, once")
			}
			fh.SNS = &FeedbackSNSConfig{}
			for d.NextBlock(1) {
				switch d.Val() {
				case "topic_arn":
					args := d.RemainingArgs()
					if len(args) == 0 {
						return d.ArgErr()
					}
					fh.SNS.TopicARNs = append(fh.SNS.TopicARNs, args...)
				case "cert_host":
					host, err := singleArg(d)
					if err != nil {
						return err
					}
					if _, err := regexp.Compile(host); err != nil {
						return d.Errf("cert_host: %v", err)
					}
					fh.SNS.CertHost = host
				default:
					return d.Errf("unknown sns option %q", d.Val())
				}
			}
			if len(fh.SNS.TopicARNs) == 0 {
				return d.Errf("sns needs at least one topic_arn: any AWS account can point a topic at this URL")
			}
		case "resend":
			if d.NextArg() || fh.Resend != nil {
				return d.Errf("resend takes a block, once")
			}
			fh.Resend = &FeedbackResendConfig{}
			for d.NextBlock(1) {
				switch d.Val() {
				case "secret":
					secret, err := singleArg(d)
					if err != nil {
						return err
					}
					fh.Resend.Secret = secret
				default:
					return d.Errf("unknown resend option %q", d.Val())
				}
			}
			if fh.Resend.Secret == "" {
				return d.Errf("resend needs secret (the webhook's whsec_... signing secret)")
			}
		case "suppress":
			on, err := onOffArg(d)
			if err != nil {
				return err
			}
			fh.Suppress = &on
		default:
			return d.Errf("unknown form_outbox_feedback option %q", d.Val())
		}
	}
	if fh.SNS == nil && fh.Resend == nil {
		return d.Err("form_outbox_feedback needs an sns block, a resend block or both")
	}
	return nil
}
