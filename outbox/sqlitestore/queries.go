package sqlitestore

import (
	"embed"

	"github.com/formoutbox/caddy-form-outbox/outbox/internal/sqlq"
)

// The store's static SQL lives in queries/*.sql, one file per concept; the Go code names
// each query once here, so a query missing from the files panics when the program starts.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlq.MustLoad(queryFiles, "queries/*.sql")

// Column lists, for the queries built at run time (ops.go, inbox.go, feedback.go).
var (
	submissionColumns = queries.Must("SubmissionColumns")
	deliveryColumns   = queries.Must("DeliveryColumns")
)

var (
	qFindDuplicate         = queries.Must("FindDuplicate")
	qInsertSubmission      = queries.Must("InsertSubmission")
	qInsertDelivery        = queries.Must("InsertDelivery")
	qInsertSubmissionEvent = queries.Must("InsertSubmissionEvent")

	qClaim = queries.Must("Claim")

	qRenew       = queries.Must("Renew")
	qRelease     = queries.Must("Release")
	qRetryStatus = queries.Must("RetryStatus")
	qRetry       = queries.Must("Retry")

	qCompleteDelivery    = queries.Must("CompleteDelivery")
	qLastAttempt         = queries.Must("LastAttempt")
	qInsertAttempt       = queries.Must("InsertAttempt")
	qInsertDeliveryEvent = queries.Must("InsertDeliveryEvent")

	qGetSubmission  = queries.Must("GetSubmission")
	qGetDelivery    = queries.Must("GetDelivery")
	qListDeliveries = queries.Must("ListDeliveries")
	qListAttempts   = queries.Must("ListAttempts")
	qListEvents     = queries.Must("ListEvents")
)
