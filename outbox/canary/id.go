package canary

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// RunID is the id of the canary submission of (form, period start): a UUIDv7 whose
// time is the period's start and whose random bits come from a hash of the pair. Every
// scheduler, in any process, plans one period's canary under this one id, and the
// stores' accept writes a submission whose id is stored already as a duplicate (no
// row, no delivery): so two schedulers racing store one canary, and a scheduler that
// stopped between storing the canary and recording its run stores nothing new when it
// tries again.
func RunID(form string, periodStart time.Time) uuid.UUID {
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], uint64(periodStart.UnixNano()))
	h := sha256.Sum256(append(append([]byte("form_outbox canary\x00"), form...), key[:]...))
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(periodStart.UnixMilli()))
	copy(u[:6], ms[2:])
	copy(u[6:], h[:10])
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	return u
}
