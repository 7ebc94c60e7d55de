-- What a delivery's claim and completion cost (docs/design.md, "Data model"). Each is an
-- update that PostgreSQL cannot make HOT (the status it changes is indexed), so it adds
-- an entry to every index the new row version belongs to. The status index now holds only
-- the deliveries an operator looks for by status, pending, failed and dead: a claim (to
-- sending) and a completion to sent add no entry there, and the index stays as small as
-- the live work however much history accumulates. Leased rows are in deliveries_leased,
-- which Stats and the claim's expired branch read; the overview and the inbox's pending
-- filter name sending as an OR arm of its own so that the planner combines the two
-- indexes (queries/inbox.sql). A listing of sent or skipped deliveries reads the table,
-- as the listing of every status always did.
DROP INDEX deliveries_status;
CREATE INDEX deliveries_status ON deliveries (status, next_attempt_at) WHERE status IN ('pending', 'failed', 'dead');

-- An attempt's foreign key cost every recorded attempt a lookup and a share lock of its
-- delivery (a trigger query per row). The cascade it gave is now spelled out: every
-- statement that deletes deliveries (erasure, retention: queries/inbox.sql, ops.sql) deletes
-- their attempts in the same transaction, and the attempt insert (queries/complete.sql)
-- only ever follows an update of its delivery in the same statement.
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
