package backup

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/formoutbox/caddy-form-outbox/outbox"
)

// DefaultLagAlert is how old the oldest record not yet in the bucket may get before the
// monitor reports it: a few shipping intervals is normal, minutes mean the bucket is not
// taking objects.
const DefaultLagAlert = 10 * time.Minute

// dropWindow is how long a release at max_local stays reported: it is an event (the
// records are gone from the journal), reported while recent, as outbox/alertsource.go
// asks of event-like conditions.
const dropWindow = time.Hour

// Monitor is the backup's 1:1 watch (docs/operations.md, "Off-host backups"): what was
// answered should be backed up. It reports, as outbox.AlertBackupLag conditions:
//
//   - lag/<instance>: records journaled but not confirmed in the bucket for over LagAlert;
//   - dropped/<instance>: records released at max_local unshipped within the last hour
//     (stored, never backed up);
//   - unjournaled/<form>: submissions stored while the journal could not take them (the
//     write-ahead append failed, outbox.Acceptor.OnNotJournaled), so never backed up,
//     within the last hour.
//
// It is an outbox.AlertSource on in-process state only: polling it costs no query and no
// bucket request.
type Monitor struct {
	Shipper  *Shipper
	LagAlert time.Duration // default DefaultLagAlert

	mu          sync.Mutex
	lastDropped int64
	droppedAt   time.Time
	droppedN    int64
	unjournaled map[string]*formGap // by form
}

type formGap struct {
	n           int
	first, last time.Time
}

var _ outbox.AlertSource = (*Monitor)(nil)

// Name implements outbox.AlertSource.
func (m *Monitor) Name() string { return "backup" }

// NotJournaled records a submission stored without a journal entry (the Acceptor's
// OnNotJournaled hook). Form and time only.
func (m *Monitor) NotJournaled(form string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unjournaled == nil {
		m.unjournaled = map[string]*formGap{}
	}
	g := m.unjournaled[form]
	if g == nil || at.Sub(g.last) > dropWindow {
		g = &formGap{first: at}
		m.unjournaled[form] = g
	}
	g.n++
	g.last = at
}

// Conditions implements outbox.AlertSource.
func (m *Monitor) Conditions(_ context.Context, now time.Time) ([]outbox.AlertCondition, error) {
	var out []outbox.AlertCondition
	s := m.Shipper
	inst := s.Instance
	lagAlert := m.LagAlert
	if lagAlert <= 0 {
		lagAlert = DefaultLagAlert
	}
	st := s.Spool.Stats()
	if !st.OldestUnshipped.IsZero() && now.Sub(st.OldestUnshipped) > lagAlert {
		out = append(out, outbox.AlertCondition{
			Kind: outbox.AlertBackupLag, Key: "lag/" + inst, Local: true, Affected: st.Unshipped, Since: st.OldestUnshipped,
			Summary: fmt.Sprintf("%d submissions on %s are not in the backup bucket yet; the oldest for %s",
				st.Unshipped, inst, now.Sub(st.OldestUnshipped).Round(time.Second)),
		})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := s.Stats().Dropped; d > m.lastDropped {
		if now.Sub(m.droppedAt) > dropWindow {
			m.droppedN = 0
		}
		m.droppedN += d - m.lastDropped
		m.lastDropped, m.droppedAt = d, now
	}
	if m.droppedN > 0 && now.Sub(m.droppedAt) <= dropWindow {
		out = append(out, outbox.AlertCondition{
			Kind: outbox.AlertBackupLag, Key: "dropped/" + inst, Local: true, Affected: int(m.droppedN), Since: m.droppedAt,
			Summary: fmt.Sprintf("%d stored submissions on %s were released from the journal at max_local and will never be in the backup bucket",
				m.droppedN, inst),
		})
	}
	forms := make([]string, 0, len(m.unjournaled))
	for f, g := range m.unjournaled {
		if now.Sub(g.last) <= dropWindow {
			forms = append(forms, f)
		}
	}
	sort.Strings(forms)
	for _, f := range forms {
		g := m.unjournaled[f]
		out = append(out, outbox.AlertCondition{
			Kind: outbox.AlertBackupLag, Key: "unjournaled/" + f, Form: f, Local: true, Affected: g.n, Since: g.first,
			Summary: fmt.Sprintf("%d submissions of form %s were stored but could not be journaled, so they are not backed up", g.n, f),
		})
	}
	return out, nil
}
