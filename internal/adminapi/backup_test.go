package adminapi

import (
	"testing"
)

// An App without `backup` answers a restore 409, and a restore needs since.
func TestBackupRestoreRouteWithoutBackup(t *testing.T) {
	s := NewServer(func() Backend { return &testBackend{store: openStore(t)} })
	if _, re := call(t, s, "POST", "/form_outbox/backup/restore?since=1h", ""); re == nil || re.Status != 409 || re.Err != ErrBackupOff {
		t.Errorf("restore without backup = %+v, want 409 %q", re, ErrBackupOff)
	}
	if _, re := call(t, s, "GET", "/form_outbox/backup/restore", ""); re == nil || re.Status != 405 {
		t.Errorf("GET restore = %+v, want 405", re)
	}
}
