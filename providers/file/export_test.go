package file

// CountDirSyncs makes p call f once per folder sync.
func CountDirSyncs(p *Provider, f func()) {
	p.dirSync.mu.Lock()
	defer p.dirSync.mu.Unlock()
	p.dirSync.count = f
}

// SyncDirPerMail makes every send of p sync the folder itself (the comparison in
// BenchmarkParallelSends).
func SyncDirPerMail(p *Provider) {
	p.dirSync.mu.Lock()
	defer p.dirSync.mu.Unlock()
	p.dirSync.each = true
}
