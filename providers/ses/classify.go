package ses

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/formoutbox/caddy-form-outbox/providers"
)

// Classify maps a SendEmail error to the outbox's classes (docs/design.md, 'SES'):
//
//   - no answer: refused/DNS before writing fails over at once; written but unanswered
//     (timeout, reset) is Ambiguous and does not fail over, since SES may have sent it;
//   - Throttling, LimitExceeded, SendingPaused, AccountSuspended,
//     MailFromDomainNotVerified, NotFound (configuration set), 5xx: Temporary, failover;
//   - MessageRejected saying an identity is "not verified": Temporary, failover (the
//     sender is set up at the other provider, maybe not here);
//   - other MessageRejected and BadRequest: Permanent, the message itself is refused;
//   - any other 4xx (bad credentials, access denied, unknown codes): Temporary with
//     failover, because it is this provider's setup that fails, and a permanent verdict
//     on an unknown code would throw away a message another provider can deliver;
//   - a 2xx whose body cannot be read: Ambiguous.
//
// ctx is the caller's context, to tell shutdown from a timeout of our own.
func Classify(ctx context.Context, wrote bool, err error) *providers.Error {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.HTTPStatusCode() == 0 {
		return providers.NetworkError(ctx, wrote, fmt.Errorf("ses send: %w", err))
	}
	status := re.HTTPStatusCode()
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	perr := &providers.Error{HTTPStatus: status, Code: code, Err: fmt.Errorf("ses send: %w", err)}
	if re.Response.Header != nil {
		perr.RetryAfter = providers.ParseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now())
	}
	switch {
	case status >= 200 && status < 300:
		perr.Class = providers.Ambiguous
	case code == "MessageRejected" && mentionsNotVerified(ae):
		perr.Class, perr.Failover = providers.Temporary, true
	case code == "MessageRejected" || code == "BadRequestException":
		perr.Class = providers.Permanent
	case status == 401 || status == 403:
		// A revoked key, a wrong signature, a suspended account: every message fails
		// the same way until an operator acts, so the destination (this account) is
		// parked, and another provider may take the message meanwhile.
		perr.Class, perr.Destination, perr.Failover = providers.Permanent, true, true
	default:
		// Throttling, TooManyRequests, LimitExceeded, SendingPaused, AccountSuspended,
		// MailFromDomainNotVerified, NotFound, InternalServiceError, any 5xx and any
		// other 4xx.
		perr.Class, perr.Failover = providers.Temporary, true
	}
	return perr
}

func mentionsNotVerified(ae smithy.APIError) bool {
	return ae != nil && strings.Contains(strings.ToLower(ae.ErrorMessage()), "not verified")
}
