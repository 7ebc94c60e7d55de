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

func TestBackupLineSaysStateAndLag(t *testing.T) {
	cases := []struct {
		h    BackupHealth
		want string
	}{
		{BackupHealth{State: "ok"}, "backup: every submission is in the bucket"},
		{BackupHealth{State: "failing", LagRecords: 20, LagSeconds: 180.4}, "backup failing: 20 submissions not in the bucket yet, the oldest for 3m0s"},
		{BackupHealth{State: "near_bound", LagRecords: 2, LagSeconds: 5}, "backup near max_local: 2 submissions not in the bucket yet, the oldest for 5s"},
		{BackupHealth{State: "not_started"}, "backup not started"},
	}
	for _, c := range cases {
		if got := c.h.Line(); got != c.want {
			t.Errorf("Line(%+v) = %q, want %q", c.h, got, c.want)
		}
	}
}
