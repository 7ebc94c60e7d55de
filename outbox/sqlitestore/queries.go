package sqlitestore

import (
	"embed"

	"github.com/formoutbox/caddy-form-outbox/outbox/internal/sqlq"
	"github.com/formoutbox/caddy-form-outbox/outbox/internal/storeflow"
)

// The store's static SQL lives in queries/*.sql, one file per concept; the Go code names
// each query once here, so a query missing from the files panics when the program starts.
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
	qFindDuplicate         = queries.Must("FindDuplicate")
	qInsertSubmission      = queries.Must("InsertSubmission")
	qInsertDelivery        = queries.Must("InsertDelivery")
	qInsertSubmissionEvent = queries.Must("InsertSubmissionEvent")

	qClaim = queries.Must("Claim")

	qRenew   = queries.Must("Renew")
	qRelease = queries.Must("Release")

	qCompleteDelivery    = queries.Must("CompleteDelivery")
	qLastAttempt         = queries.Must("LastAttempt")
	qInsertAttempt       = queries.Must("InsertAttempt")
	qInsertDeliveryEvent = queries.Must("InsertDeliveryEvent")

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
	qCheckpointWAL           = queries.Must("CheckpointWAL")

	qSearchSubmissions        = queries.Must("SearchSubmissions")
	qSearchSubmissionsOrder   = queries.Must("SearchSubmissionsOrder")
	qSubmissionForms          = queries.Must("SubmissionForms")
	qOverviewSubmissions      = queries.Must("OverviewSubmissions")
	qOverviewSubmissionsGroup = queries.Must("OverviewSubmissionsGroup")
	qOverviewDeliveries       = queries.Must("OverviewDeliveries")
	qOverviewDeliveriesGroup  = queries.Must("OverviewDeliveriesGroup")
	qSubmissionEvents         = queries.Must("SubmissionEvents")

	qCreateMigrationsTable = queries.Must("CreateMigrationsTable")
	qAppliedMigrations     = queries.Must("AppliedMigrations")
	qRecordMigration       = queries.Must("RecordMigration")
	qMigrationLevel        = queries.Must("MigrationLevel")

	qSavepoint           = queries.Must("Savepoint")
	qRollbackToSavepoint = queries.Must("RollbackToSavepoint")
	qReleaseSavepoint    = queries.Must("ReleaseSavepoint")

	qWriteSavepoint  = queries.Must("WriteSavepoint")
	qWriteRollbackTo = queries.Must("WriteRollbackTo")
	qWriteRelease    = queries.Must("WriteRelease")
)
