// Package backup copies the spool's journal off the host to S3-compatible object storage
// and restores a time window of it into a store (docs/design.md, "Off-host backups").
//
// The journal (outbox/spool in `spool always` mode) is the write-ahead point: intake
// fsyncs every submission there and never waits on the bucket. A Shipper follows it:
// each sealed segment becomes one object, a gzip of JSON lines (record.go), named by the
// time of its oldest record and the instance (key.go) so a restore lists a window by
// prefix, with its SHA-256 in the object's metadata. The spool keeps a segment until the
// bucket confirmed its object (spool.Hold), within a size bound (Shipper.MaxLocal).
//
// Restore reads the objects of a window, checks each against its SHA-256 and stores the
// records the database lacks through outbox.Accept, the path replay uses, so a record
// already stored (same submission id, or an idempotency key bound to the same content)
// writes nothing.
//
// This package never imports Caddy.
package backup
