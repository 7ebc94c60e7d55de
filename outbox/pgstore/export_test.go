package pgstore

// Hooks for the external tests: they may not reach internals otherwise, because they
// import storetest, which imports this package.

// NotifySends counts NOTIFY statements this store has sent.
func NotifySends(s *Store) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notifySends
}

// SetOnListening installs a hook called whenever Listen has its LISTEN in place.
func SetOnListening(s *Store, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onListening = f
}

// ChannelName is the store's NOTIFY channel.
func ChannelName(s *Store) string { return s.channel }

const NotifyWindow = notifyWindow

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
