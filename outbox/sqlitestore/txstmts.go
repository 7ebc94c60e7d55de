package sqlitestore

import (
	"context"
	"database/sql"
)

// txQuerier is what the write helpers need of a transaction: *sql.Tx, or txStmts.
type txQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// txStmts is the store's shared write transaction (combine.go) as each of its functions
// sees it. It prepares each distinct query once per transaction: SQLite parses a
// statement on every unprepared execution, and a group commit repeats the same handful of
// statements for every member: parsing them once per batch instead of once per member was
// a quarter of intake's CPU. (Statements cannot be prepared on the store once and for
// all: the writer pool's only connection is held by the transaction.) The statements
// close with the transaction.
//
// Every statement runs under a context no caller can cancel, whatever ctx its caller
// passes: the modernc driver interrupts a statement whose context ends, and SQLite rolls
// back the whole transaction of an interrupted write, every other function's work in it
// included. A caller gives up only before its function starts (combine.go).
type txStmts struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

func newTxStmts(tx *sql.Tx) *txStmts { return &txStmts{tx: tx, m: map[string]*sql.Stmt{}} }

// stmtCtx is the context of every statement of the shared transaction (see txStmts).
var stmtCtx = context.Background()

func (t *txStmts) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.m[query]; ok {
		return st, nil
	}
	st, err := t.tx.PrepareContext(stmtCtx, query)
	if err != nil {
		return nil, err
	}
	t.m[query] = st
	return st, nil
}

// ExecContext runs query; ctx is ignored (see txStmts).
func (t *txStmts) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(stmtCtx, args...)
}

// QueryRowContext reports a failed prepare through the returned row, as *sql.Tx does: it
// falls back to the transaction, which fails the same way. ctx is ignored (see txStmts).
func (t *txStmts) QueryRowContext(_ context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(query)
	if err != nil {
		return t.tx.QueryRowContext(stmtCtx, query, args...)
	}
	return st.QueryRowContext(stmtCtx, args...)
}

// QueryContext runs a query of many rows; ctx is ignored (see txStmts).
func (t *txStmts) QueryContext(_ context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(stmtCtx, args...)
}

// execScript runs a script of several statements (a migration), unprepared.
func (t *txStmts) execScript(script string) error {
	_, err := t.tx.ExecContext(stmtCtx, script)
	return err
}

var (
	_ txQuerier = (*sql.Tx)(nil)
	_ txQuerier = (*txStmts)(nil)
)
