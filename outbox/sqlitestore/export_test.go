package sqlitestore

import (
	"context"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// MigrationVersions lists the embedded migrations' versions, in order.
func MigrationVersions() []int {
	ms, err := migrationList()
	if err != nil {
		panic(err)
	}
	vs := make([]int, len(ms))
	for i, m := range ms {
		vs[i] = m.Version
	}
	return vs
}

// WriterSynchronous is the writer connection's synchronous setting (2 is FULL).
func WriterSynchronous(s *Store) (int, error) {
	var v int
	err := s.w.QueryRow(`PRAGMA synchronous`).Scan(&v)
	return v, err
}

// ClaimSynchronous is Claim committing with synchronous=FULL (BenchmarkClaimCommit).
func ClaimSynchronous(ctx context.Context, s *Store, p outbox.ClaimParams) ([]outbox.Delivery, error) {
	return s.claim(ctx, p, s.writeTx)
}
