package feedback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// DefaultMaxBody bounds a feedback request: SNS messages are at most 256 KB, plus the
// envelope.
const DefaultMaxBody = 512 << 10

// storeTimeout bounds the one store write per message.
const storeTimeout = 10 * time.Second

// Config configures a Receiver. At least one of SNS and Resend is required.
type Config struct {
	Store  outbox.FeedbackStore
	SNS    *SNSConfig
	Resend *ResendConfig
	// Suppress adds hard-bounced and complaining recipients to the suppression list.
	Suppress bool
	// OnRecorded is called after feedback was stored (metrics, Caddy events).
	OnRecorded func(outbox.Feedback, outbox.FeedbackResult)
	Logger     *zap.Logger
	// Now is the clock for timestamp checks; default time.Now.
	Now     func() time.Time
	MaxBody int64
}

// Receiver is the http.Handler for provider feedback. A request carrying svix-* headers
// is a Resend webhook; anything else is an SNS message.
type Receiver struct {
	cfg       Config
	sns       *snsReceiver
	resendKey []byte
	log       *zap.Logger
}

// New checks cfg and builds a Receiver.
func New(cfg Config) (*Receiver, error) {
	if cfg.Store == nil {
		return nil, errors.New("feedback: a store is required")
	}
	if cfg.SNS == nil && cfg.Resend == nil {
		return nil, errors.New("feedback: configure sns, resend or both")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	r := &Receiver{cfg: cfg, log: cfg.Logger}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if cfg.SNS != nil {
		s, err := newSNSReceiver(*cfg.SNS, cfg.Now)
		if err != nil {
			return nil, fmt.Errorf("feedback: %w", err)
		}
		r.sns = s
	}
	if cfg.Resend != nil {
		key, err := svixKey(cfg.Resend.Secret)
		if err != nil {
			return nil, fmt.Errorf("feedback: resend: %w", err)
		}
		r.resendKey = key
		if r.cfg.Resend.Tolerance <= 0 {
			r.cfg.Resend.Tolerance = DefaultSvixTolerance
		}
	}
	return r, nil
}

// ServeHTTP verifies, records and answers one feedback message.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
		return
	}
	ans, err := r.handle(req)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) && he.status < 500 {
			r.log.Info("feedback refused", zap.Int("status", he.status), zap.Error(err))
		} else {
			r.log.Error("feedback failed", zap.Error(err))
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

func (r *Receiver) handle(req *http.Request) (answer, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, r.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return answer{}, refuse(http.StatusRequestEntityTooLarge, "feedback body too large", nil)
		}
		return answer{}, refuse(http.StatusBadRequest, "read feedback body", err)
	}
	if req.Header.Get("svix-id") != "" {
		return r.handleResend(req, body)
	}
	if r.sns == nil {
		return answer{}, refuse(http.StatusBadRequest, "no feedback source matches this request (want a Resend webhook)", nil)
	}
	return r.handleSNS(req.Context(), body)
}

func (r *Receiver) handleResend(req *http.Request, body []byte) (answer, error) {
	if r.resendKey == nil {
		return answer{}, refuse(http.StatusBadRequest, "Resend webhooks are not configured here", nil)
	}
	id, err := verifySvix(req.Header, body, r.resendKey, r.cfg.Resend.Tolerance, r.cfg.Now())
	if err != nil {
		return answer{}, err
	}
	f, ok, err := parseResendEvent(body)
	if err != nil {
		return answer{}, err
	}
	if !ok {
		return answer{OK: true, Ignored: "event type not tracked"}, nil
	}
	f.ReceiptID = id
	return r.record(req.Context(), f)
}

func (r *Receiver) handleSNS(ctx context.Context, body []byte) (answer, error) {
	m, err := r.sns.parse(ctx, body)
	if err != nil {
		return answer{}, err
	}
	switch m.Type {
	case "SubscriptionConfirmation":
		if err := r.sns.confirm(ctx, m); err != nil {
			return answer{}, err
		}
		r.log.Info("confirmed SNS subscription", zap.String("topic_arn", m.TopicArn))
		return answer{OK: true}, nil
	case "UnsubscribeConfirmation":
		r.log.Warn("SNS subscription ended; SES feedback stops until it is subscribed again", zap.String("topic_arn", m.TopicArn))
		return answer{OK: true}, nil
	}
	f, ok, err := parseSESEvent(m.Message)
	if err != nil {
		return answer{}, err
	}
	if !ok {
		return answer{OK: true, Ignored: "event type not tracked"}, nil
	}
	f.ReceiptID = m.MessageID
	return r.record(ctx, f)
}

// record stores f. An unknown message and a replay are answered 200: no retry can make
// them apply, and a 4xx would only make the sender retry for hours (SES topics are often
// shared with other senders' mail).
func (r *Receiver) record(ctx context.Context, f outbox.Feedback) (answer, error) {
	f.ReceivedAt = r.cfg.Now()
	f.Suppress = r.cfg.Suppress
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	res, err := r.cfg.Store.RecordFeedback(sctx, f)
	fields := []zap.Field{zap.String("source", f.Source), zap.String("receipt_id", f.ReceiptID),
		zap.String("kind", string(f.Kind)), zap.String("bounce_type", f.BounceType)}
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		r.log.Info("feedback for an unknown message ignored", append(fields, zap.String("provider_message_id", f.ProviderMessageID))...)
		return answer{OK: true, Ignored: "no delivery matches this message"}, nil
	case errors.Is(err, outbox.ErrFeedbackReplay):
		r.log.Info("feedback already received; ignored", fields...)
		return answer{OK: true, Duplicate: true}, nil
	case err != nil:
		return answer{}, refuse(http.StatusServiceUnavailable, "store feedback", err)
	}
	r.log.Info("feedback recorded", append(fields, zap.String("delivery_id", res.Delivery.ID.String()),
		zap.Bool("dead", res.Dead), zap.Bool("suppressed", res.Suppressed))...)
	if r.cfg.OnRecorded != nil {
		r.cfg.OnRecorded(f, res)
	}
	outcome := string(f.Kind)
	if f.BounceType != "" {
		outcome += "/" + f.BounceType
	}
	return answer{OK: true, DeliveryID: res.Delivery.ID.String(), Outcome: outcome}, nil
}

var _ http.Handler = (*Receiver)(nil)
