// Package storetest holds the outbox.Store conformance suite (Run) that every store
// implementation must pass, and the helpers other packages' tests use to get a real,
// isolated store: a temporary SQLite file or a fresh PostgreSQL schema.
//
// PostgreSQL tests use the server named by FORM_OUTBOX_TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). An unreachable server fails
// the test: it never skips.
package storetest
