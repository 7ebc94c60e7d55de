package pgstore

import (
	"embed"

	"github.com/formoutbox/caddy-form-outbox/outbox/internal/sqlq"
)

// The store's static SQL lives in queries/*.sql, one file per concept, with the comments
// that explain each statement; the Go code names each query once here, so a query missing
// from the files panics when the program starts. The texts are constants, so pgx's
// statement cache prepares each once per connection as before.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlq.MustLoad(queryFiles, "queries/*.sql")

// deliveryColumns is the deliveries column list, for the queries built at run time
// (ops.go, feedback.go).
var deliveryColumns = queries.Must("DeliveryColumns")

var (
	acceptOneSQL = queries.Must("AcceptOne")
	acceptSetSQL = queries.Must("AcceptSet")
	duplicateSQL = queries.Must("FindDuplicate")

	claimSQL = queries.Must("Claim")

	qRenew          = queries.Must("Renew")
	qRelease        = queries.Must("Release")
	qRetry          = queries.Must("Retry")
	qDeliveryExists = queries.Must("DeliveryExists")

	completeOneSQL = queries.Must("CompleteOne")
	completeSetSQL = queries.Must("CompleteSet")

	qGetSubmission  = queries.Must("GetSubmission")
	qGetDelivery    = queries.Must("GetDelivery")
	qListDeliveries = queries.Must("ListDeliveries")
	qListAttempts   = queries.Must("ListAttempts")
	qListEvents     = queries.Must("ListEvents")
)
