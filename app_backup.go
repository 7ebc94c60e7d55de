package formoutbox

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/formoutbox/caddy-form-outbox/internal/adminapi"
	"github.com/formoutbox/caddy-form-outbox/internal/caddyconf"
	"github.com/formoutbox/caddy-form-outbox/internal/telemetry"
	"github.com/formoutbox/caddy-form-outbox/outbox"
	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
)

// backupState is the App's off-host backup (docs/design.md, "Off-host backups"): the
// bucket client built at Provision, the shipper running between Start and Stop.
type backupState struct {
	bucket  *backup.S3 // nil without `backup`
	shipper atomic.Pointer[backup.Shipper]
	monitor atomic.Pointer[backup.Monitor] // the 1:1 watch, an outbox.AlertSource
}

// provisionBackup builds the bucket client (it makes no request) and turns the
// write-ahead spool on: the journal is the write-ahead point the shipper follows, so a
// backup without it would miss every submission the store took directly. It runs after
// provisionSpool and before the Acceptor is built.
func (a *App) provisionBackup() error {
	bc := a.Backup
	if bc == nil {
		return nil
	}
	switch a.spoolMode {
	case caddyconf.SpoolOff:
		return fmt.Errorf("form_outbox: backup needs the spool, which `spool off` turns off; use `spool always` (or leave spool out)")
	case caddyconf.SpoolAlways:
	default:
		a.spoolMode = caddyconf.SpoolAlways
		a.logger.Info("backup: spool set to always (write-ahead): the shipper follows its journal")
	}
	repl := caddy.NewReplacer()
	b, err := backup.NewS3(a.ctx, backup.Config{
		URL: bc.URL, Endpoint: repl.ReplaceKnown(bc.Endpoint, ""), Region: repl.ReplaceKnown(bc.Region, ""),
		AccessKeyID: repl.ReplaceKnown(bc.AccessKeyID, ""), SecretAccessKey: repl.ReplaceKnown(bc.SecretAccessKey, ""),
		PathStyle: bc.PathStyle,
	})
	if err != nil {
		return fmt.Errorf("form_outbox: %w", err)
	}
	a.backups.bucket = b
	if reg := a.ctx.GetMetricsRegistry(); reg != nil {
		for _, c := range telemetry.BackupCollectors(a.backups.shipper.Load) {
			if err := telemetry.RegisterOnce(reg, c); err != nil {
				a.logger.Warn("register backup metric", zap.Error(err))
			}
		}
	}
	return nil
}

// startBackup starts the shipper on the spool startSpool opened.
func (a *App) startBackup() {
	f := a.openSpool()
	if a.backups.bucket == nil || f == nil {
		return
	}
	bc := a.Backup
	s := &backup.Shipper{
		Spool: f.Spool, Bucket: a.backups.bucket, Prefix: a.backups.bucket.Prefix,
		Instance: caddy.NewReplacer().ReplaceKnown(bc.Instance, ""),
		Interval: time.Duration(bc.Every), MaxLocal: bc.MaxLocal,
		Logger: a.logger.Named("backup"),
	}
	s.Start()
	a.backups.shipper.Store(s)
	a.backups.monitor.Store(&backup.Monitor{Shipper: s})
	a.logger.Info("backup on", zap.String("url", bc.URL), zap.String("instance", s.Instance),
		zap.Duration("every", s.Interval))
}

// stopBackup stops the shipper; what is not shipped stays in the spool for the next start.
func (a *App) stopBackup() {
	if s := a.backups.shipper.Load(); s != nil {
		if err := s.Stop(); err != nil {
			a.logger.Error("backup: stop", zap.Error(err))
		}
	}
}

// backupHealth is the health probe's view of the backup; nil without one.
func (a *App) backupHealth() func() *adminapi.BackupHealth {
	if a.Backup == nil {
		return nil
	}
	return func() *adminapi.BackupHealth {
		s := a.backups.shipper.Load()
		if s == nil {
			return &adminapi.BackupHealth{State: "not_started", DestinationURL: a.Backup.URL}
		}
		return adminapi.BackupHealthOf(a.Backup.URL, s)
	}
}

// notJournaled is the Acceptor's OnNotJournaled: a submission stored while the journal
// refused it is in no backup, which the monitor reports.
func (a *App) notJournaled(sub *outbox.Submission) {
	if m := a.backups.monitor.Load(); m != nil {
		m.NotJournaled(sub.Form, sub.CreatedAt)
	}
}

// BackupAlertSource is the backup's 1:1 monitor for the owner alerts (kind
// outbox.AlertBackupLag); nil without `backup` or before Start.
func (a *App) BackupAlertSource() outbox.AlertSource {
	if m := a.backups.monitor.Load(); m != nil {
		return m
	}
	return nil
}

// RestoreBackup restores a window from this App's bucket into its store (the admin
// route POST /form_outbox/backup/restore) and wakes the workers for what it stored.
func (a *App) RestoreBackup(ctx context.Context, w backup.Window, opt backup.RestoreOptions) (backup.RestoreReport, error) {
	b := a.backups.bucket
	if b == nil {
		return backup.RestoreReport{}, adminapi.ErrBackupOff
	}
	rep, err := backup.Restore(ctx, b, b.Prefix, a.store, w, opt)
	if rep.Stored > 0 && !opt.DryRun {
		a.worker.Broadcast(context.WithoutCancel(ctx))
	}
	return rep, err
}
