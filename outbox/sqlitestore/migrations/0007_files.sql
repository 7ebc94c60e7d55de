-- Uploaded files (docs/design.md, "Files"), written in the same transaction as their
-- submission and deleted with it (retention, erasure). The metadata is one row per file;
-- the content is split into chunks of at most outbox.FileChunkSize bytes, so that neither
-- writing nor downloading a file needs all of it in memory. A file kept as metadata only
-- (a spam submission's) has no chunks.
CREATE TABLE files (
	id            TEXT PRIMARY KEY,
	submission_id TEXT NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
	position      INTEGER NOT NULL,
	field         TEXT NOT NULL,
	name          TEXT NOT NULL,
	declared_type TEXT NOT NULL DEFAULT '',
	sniffed_type  TEXT NOT NULL,
	size          INTEGER NOT NULL CHECK (size >= 0),
	sha256        TEXT NOT NULL,
	rejected      TEXT NOT NULL DEFAULT '',
	has_content   INTEGER NOT NULL CHECK (has_content IN (0, 1)),
	created_at    INTEGER NOT NULL,
	UNIQUE (submission_id, position)
) STRICT;

CREATE TABLE file_chunks (
	file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,
	data    BLOB NOT NULL,
	PRIMARY KEY (file_id, seq)
) STRICT;
