//go:build !unix

package spool

import "os"

// lockDir does not lock on this platform: one process per spool directory is then the
// operator's to ensure (README, spool).
func lockDir(string) (*os.File, error) { return nil, nil }
