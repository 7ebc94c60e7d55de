// Package e2e holds the process-level tests: they build cmd/caddy once, run it with
// Caddyfiles on loopback ports, drive it over HTTP, kill it with SIGKILL, restart it and
// assert on the database. These are the tests users trust; they import no Caddy package,
// only the binary.
package e2e
