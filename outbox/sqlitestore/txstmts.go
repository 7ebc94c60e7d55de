package sqlitestore

import (
	"context"
	"database/sql"
)

// txQuerier is what the write helpers need of a transaction: *sql.Tx, or txStmts.
type txQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txStmts runs statements in tx, preparing each distinct query once per transaction.
// SQLite parses a statement on every unprepared execution, and a group commit repeats the
// same handful of statements for every member: parsing them once per batch instead of
// once per member was a quarter of intake's CPU. (Statements cannot be prepared on the
// store once and for all: the writer pool's only connection is held by the transaction.)
// The statements close with the transaction.
type txStmts struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

func newTxStmts(tx *sql.Tx) *txStmts { return &txStmts{tx: tx, m: map[string]*sql.Stmt{}} }

func (t *txStmts) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.m[query]; ok {
		return st, nil
	}
	st, err := t.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	t.m[query] = st
	return st, nil
}

func (t *txStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryRowContext reports a failed prepare through the returned row, as *sql.Tx does: it
// falls back to the transaction, which fails the same way.
func (t *txStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

var (
	_ txQuerier = (*sql.Tx)(nil)
	_ txQuerier = (*txStmts)(nil)
)
