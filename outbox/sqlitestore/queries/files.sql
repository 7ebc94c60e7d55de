-- name: FileColumns
-- The files columns read back (scanFile, files.go).
id, submission_id, field, name, declared_type, sniffed_type, size, sha256, rejected, has_content, created_at

-- name: InsertFile
INSERT INTO files (id, submission_id, position, field, name, declared_type, sniffed_type, size, sha256,
	rejected, has_content, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: InsertFileChunk
INSERT INTO file_chunks (file_id, seq, data) VALUES (?, ?, ?)

-- name: SubmissionFiles
SELECT {{FileColumns}} FROM files WHERE submission_id = ? ORDER BY position

-- name: GetFile
SELECT {{FileColumns}} FROM files WHERE id = ?

-- name: FileChunk
-- One chunk of a file's content. A download reads the chunks one query at a time, so a
-- slow client never holds a read transaction open.
SELECT data FROM file_chunks WHERE file_id = ? AND seq = ?
