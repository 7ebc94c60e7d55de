package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Errors shared by every Store implementation.
var (
	// ErrLeaseLost means a fenced write found a different (or no) lease token on the row:
	// another worker owns the delivery now, and the caller must stop and record nothing.
	ErrLeaseLost = errors.New("outbox: lease lost")
	// ErrNotFound means no row has the given id.
	ErrNotFound = errors.New("outbox: not found")
	// ErrNotRetryable means a manual retry was asked for a delivery that is not dead or failed.
	ErrNotRetryable = errors.New("outbox: delivery is not dead or failed")
)

// AcceptResult tells the handler what to answer. When Duplicate is true, nothing was
// written and ID/Status are those of the submission stored with the same id, or the one
// that bound the same (form, idempotency key) (see BindsIdempotencyKey).
type AcceptResult struct {
	ID        uuid.UUID
	Status    SubmissionStatus
	Duplicate bool
	// KeyReused is set when the key was bound to a submission with other content. From
	// Store.AcceptBatch it comes with Duplicate (nothing written yet); from outbox.Accept and
	// GroupCommitter.Accept it comes without, for the post then stored as
	// quarantined/idempotency_key_reused (ID and Status are that new row's).
	KeyReused bool
}

// ClaimParams are the inputs of one claim. Now comes from the worker's clock so that tests
// can drive leases and backoff without sleeping.
type ClaimParams struct {
	Owner string        // worker identity, stored in lease_owner
	Limit int           // batch size
	Lease time.Duration // locked_until = Now + Lease
	Now   time.Time
}

// Completion is the fenced outcome of one attempt. The store writes the attempt row and
// the delivery's new state in one transaction, only if the delivery still carries
// LeaseToken; otherwise it writes nothing and returns ErrLeaseLost.
type Completion struct {
	DeliveryID uuid.UUID
	LeaseToken string
	// Status is the delivery's new status: DeliverySent, DeliveryFailed or DeliveryDead.
	Status            DeliveryStatus
	NextAttemptAt     time.Time // for DeliveryFailed
	LastError         string
	Provider          string
	ProviderMessageID string
	Attempt           Attempt
	Now               time.Time
	// Event, when set (delivery.dead), is written in the same transaction.
	Event *Event
}

// Store is the durable side of the outbox. It has one way to write submissions
// (AcceptBatch; AcceptOne is a batch of one) and one way to record outcomes
// (CompleteBatch; CompleteOne). Two implementations (sqlitestore, pgstore) are
// held to the same contract by the storetest conformance suite. Both implement every part
// of it, so callers never ask a store whether it can batch, keep feedback or serve
// operators: the parts are named interfaces only so that a consumer (feedback.Receiver,
// the Pruner) can say how little of the store it uses.
type Store interface {
	BatchAccepter
	BatchCompleter
	FeedbackStore
	Ops
	Inbox
	FileStore
	DigestStore
	DestinationStore
	AlertStore
	LedgerStore
	CanaryStore

	// Claim leases up to p.Limit due deliveries: pending or failed with next_attempt_at <=
	// Now, or sending with locked_until < Now (an expired lease). Each claimed row gets
	// status sending, a fresh lease token, lease owner, locked_until = Now+Lease and
	// attempts+1. Concurrent claimers never receive the same row.
	Claim(ctx context.Context, p ClaimParams) ([]Delivery, error)

	// Renew extends a lease this worker still holds; ErrLeaseLost if it does not.
	Renew(ctx context.Context, id uuid.UUID, token string, lockedUntil time.Time) error

	// Release gives back a lease without charging an attempt (shutdown): the delivery
	// returns to its previous due status with attempts-1 and is due at once. Fenced.
	Release(ctx context.Context, id uuid.UUID, token string, now time.Time) error

	// Retry makes a dead or failed delivery pending again with a fresh attempt budget
	// (attempts = 0), due at now. History is kept. ErrNotFound, ErrNotRetryable.
	Retry(ctx context.Context, id uuid.UUID, now time.Time) error

	// Read side, used by tests, the worker and (later) the admin API.
	GetSubmission(ctx context.Context, id uuid.UUID) (*Submission, error)
	GetDelivery(ctx context.Context, id uuid.UUID) (*Delivery, error)
	ListDeliveries(ctx context.Context, submissionID uuid.UUID) ([]Delivery, error)
	ListAttempts(ctx context.Context, deliveryID uuid.UUID) ([]Attempt, error)
	ListEvents(ctx context.Context, kind string, limit int) ([]Event, error)

	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the pool / file handle.
	Close() error
}

// Notifier is implemented by stores that can wake workers in other processes
// (PostgreSQL LISTEN/NOTIFY). Notifications only accelerate delivery: the worker's tick
// is the correctness path.
type Notifier interface {
	// Broadcast asks other processes' workers to look for due work. Implementations
	// debounce: many calls in a short window cause at most one NOTIFY.
	Broadcast(ctx context.Context)
	// Listen calls wake whenever another process broadcasts, until ctx ends.
	Listen(ctx context.Context, wake func()) error
}

// MigrationLevel is how far a database's schema is migrated: the highest migration
// applied to it, and the highest this build knows. Applied above Known means a newer
// build has migrated the database (`caddy form-outbox check` reports it).
type MigrationLevel struct {
	Applied int
	Known   int
}

// MigrationReporter is implemented by both stores: a read of the migrations table, for
// `caddy form-outbox check`.
type MigrationReporter interface {
	MigrationLevel(ctx context.Context) (MigrationLevel, error)
}
