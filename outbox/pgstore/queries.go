package pgstore

import (
	"embed"

	"github.com/formoutbox/caddy-form-outbox/outbox/internal/sqlq"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// The store's static SQL lives in queries/*.sql, one file per concept, with the comments
// that explain each statement; the Go code names each query once here, so a query missing
// from the files panics when the program starts. The texts are constants, so pgx's
// statement cache prepares each once per connection as before.
//
//go:embed queries/*.sql
var queryFiles embed.FS

var queries = sqlq.MustLoad(queryFiles, "queries/*.sql")

// fq are the statements of the sequences written once in outbox/internal/storeflow
// (flow.go runs them).
var fq = func() (q storeflow.Queries) {
	queries.MustFill(&q)
	return q
}()

// pageFragments are the conditions of the filtered reads (storeflow.Page), by name.
var pageFragments = queries.MustMap(storeflow.PageFragments)

var (
	acceptSetSQL = queries.Must("AcceptSet")
	duplicateSQL = queries.Must("FindDuplicate")

	claimSQL = queries.Must("Claim")

	qRenew   = queries.Must("Renew")
	qRelease = queries.Must("Release")

	completeSetSQL = queries.Must("CompleteSet")

	qGetSubmission  = queries.Must("GetSubmission")
	qGetDelivery    = queries.Must("GetDelivery")
	qListDeliveries = queries.Must("ListDeliveries")
	qListAttempts   = queries.Must("ListAttempts")
	qListEvents     = queries.Must("ListEvents")

	qListFeedback     = queries.Must("ListFeedback")
	qListSuppressions = queries.Must("ListSuppressions")
	qIsSuppressed     = queries.Must("IsSuppressed")

	qDeliveriesByStatus      = queries.Must("DeliveriesByStatus")
	qDeliveriesByStatusOrder = queries.Must("DeliveriesByStatusOrder")
	qStats                   = queries.Must("Stats")
	qTryPrunerLock           = queries.Must("TryPrunerLock")
	qPrunerUnlock            = queries.Must("PrunerUnlock")
	qDeleteAttempts          = queries.Must("DeleteAttempts")

	qSearchSubmissions      = queries.Must("SearchSubmissions")
	qSearchSubmissionsOrder = queries.Must("SearchSubmissionsOrder")
	qSubmissionForms        = queries.Must("SubmissionForms")
	qOverviewSubmissions    = queries.Must("OverviewSubmissions")
	qOverviewDeliveries     = queries.Must("OverviewDeliveries")
	qSubmissionEvents       = queries.Must("SubmissionEvents")

	qDatabaseNow           = queries.Must("DatabaseNow")
	qNotify                = queries.Must("Notify")
	qMigrationLock         = queries.Must("MigrationLock")
	qSchemaExists          = queries.Must("SchemaExists")
	qCreateMigrationsTable = queries.Must("CreateMigrationsTable")
	qAppliedMigrations     = queries.Must("AppliedMigrations")
	qMigrationLevel        = queries.Must("MigrationLevel")
	qRecordMigration       = queries.Must("RecordMigration")
)
