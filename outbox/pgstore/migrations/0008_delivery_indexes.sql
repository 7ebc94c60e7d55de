-- What a sent delivery costs (docs/design.md, "Data model"). A completion to sent updates
-- every index the new row version belongs to (PostgreSQL cannot make it a HOT update: the
-- status it changes is indexed), so the status index now holds only the deliveries not
-- finished: a completion to sent or skipped adds no entry there, and the index stays as
-- small as the live work however much history accumulates. Every query naming an
-- unfinished status by literal (the overview, the inbox's dead and pending filters, Stats)
-- or by a parameter bound to one (DeliveriesByStatus, planned per value) still uses it; a
-- listing of sent or skipped deliveries reads the table, as the listing of every status
-- always did.
DROP INDEX deliveries_status;
CREATE INDEX deliveries_status ON deliveries (status, next_attempt_at) WHERE status NOT IN ('sent', 'skipped');

-- An attempt's foreign key cost every recorded attempt a lookup and a share lock of its
-- delivery (a trigger query per row). The cascade it gave is now spelled out: every
-- statement that deletes deliveries (erasure, retention: queries/inbox.sql, ops.sql) deletes
-- their attempts in the same transaction, and the attempt insert (queries/complete.sql)
-- only ever follows an update of its delivery in the same statement.
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
