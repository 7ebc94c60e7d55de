// Package spool is the outbox's local write-ahead fallback (docs/design.md, 'Spool'). When
// the store fails or is too slow, a submission and its planned deliveries (which already
// carry their UUIDv7 ids) are appended to a segment file and fsynced before the visitor
// is told "queued". A Replayer later drains the segments into an outbox.Store; replay is
// idempotent because Store.AcceptBatch treats an already stored submission id as a duplicate
// and writes nothing.
//
// On disk a spool is a directory of segment files named seg-<20-digit sequence>.spool,
// appended to only, plus a corrupt/ folder where damaged bytes are kept for a human. Each
// record is framed as
//
//	magic "FOS1" | uint32 length | uint32 CRC32C(payload) | payload
//
// (big-endian), and the payload is a versioned JSON encoding of the submission and its
// deliveries. A torn tail (a crash mid-append) or a flipped bit fails the frame check;
// the reader reports it, keeps the bytes aside and resynchronises on the next magic, so
// one bad record never blocks the ones around it.
//
// This package never imports Caddy.
package spool
