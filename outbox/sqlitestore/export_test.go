package sqlitestore

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
