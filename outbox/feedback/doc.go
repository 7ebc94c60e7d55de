// Package feedback receives what email providers report after they accepted a message:
// bounces, complaints and deliveries from Amazon SES (event publishing through an SNS
// HTTPS subscription) and Resend (Svix-signed webhooks). It verifies every message
// (SNS: RSA signature with a certificate fetched only from an allowed SNS host; Resend:
// HMAC with the endpoint's secret and a timestamp tolerance), turns it into an
// outbox.Feedback and records it through an outbox.FeedbackStore, which de-duplicates by
// the message's id so a replay changes nothing. It knows nothing of Caddy.
package feedback
