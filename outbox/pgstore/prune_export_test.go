package pgstore

// PruneSubmissionsSQL is the retention batch's statement, for its plan test.
func PruneSubmissionsSQL() string { return fq.PruneSubmissions }
