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

// OnSyncJoined makes p call f each time a send joins the folder syncs' queue.
func OnSyncJoined(p *Provider, f func()) {
	p.dirSync.mu.Lock()
	defer p.dirSync.mu.Unlock()
	p.dirSync.joined = f
}
