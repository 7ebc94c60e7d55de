package sqlitestore

import "time"

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

// SetWriteHooks installs test hooks on s's write combiner (combine.go): queued runs after
// a write joined the queue, commit before the COMMIT of a transaction holding n writes
// (an error from it fails the transaction). Either may be nil.
func SetWriteHooks(s *Store, queued func(), commit func(n int) error) {
	s.c.hooks.Store(&writeHooks{queued: queued, commit: commit})
}

// SetWriteLimits bounds s's shared write transactions to maxFns writes (0: as they are)
// and maxTime.
func SetWriteLimits(s *Store, maxFns int, maxTime time.Duration) {
	s.c.mu.Lock()
	if maxFns > 0 {
		s.c.maxFns = maxFns
	}
	s.c.maxTime = maxTime
	s.c.mu.Unlock()
}
