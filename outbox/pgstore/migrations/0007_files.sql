-- Uploaded files (docs/design.md, "Files"), written in the same transaction as their
-- submission and deleted with it (retention, erasure). The metadata is one row per file;
-- the content is split into chunks of at most outbox.FileChunkSize bytes, so that neither
-- writing nor downloading a file needs all of it in memory. A file kept as metadata only
-- (a spam submission's) has no chunks.
CREATE TABLE files (
	id            uuid PRIMARY KEY,
	submission_id uuid NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
	position      integer NOT NULL,
	field         text NOT NULL,
	name          text NOT NULL,
	declared_type text NOT NULL DEFAULT '',
	sniffed_type  text NOT NULL,
	size          bigint NOT NULL CHECK (size >= 0),
	sha256        text NOT NULL,
	rejected      text NOT NULL DEFAULT '',
	has_content   boolean NOT NULL,
	created_at    timestamptz NOT NULL,
	UNIQUE (submission_id, position)
);

CREATE TABLE file_chunks (
	file_id uuid NOT NULL REFERENCES files (id) ON DELETE CASCADE,
	seq     integer NOT NULL,
	data    bytea NOT NULL,
	PRIMARY KEY (file_id, seq)
);
-- Uploads are mostly compressed already (PDF, JPEG, PNG, ZIP): store the chunks out of
-- line without trying to compress them again.
ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
