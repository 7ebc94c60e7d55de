-- name: FileColumns
-- The files columns read back (scanFile, files.go).
id, submission_id, field, name, declared_type, sniffed_type, size, sha256, rejected, has_content, created_at

-- name: InsertFile
INSERT INTO files (id, submission_id, position, field, name, declared_type, sniffed_type, size, sha256,
	rejected, has_content, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)

-- name: InsertFileChunk
INSERT INTO file_chunks (file_id, seq, data) VALUES ($1, $2, $3)

-- name: SubmissionFiles
SELECT {{FileColumns}} FROM files WHERE submission_id = $1 ORDER BY position

-- name: GetFile
SELECT {{FileColumns}} FROM files WHERE id = $1

-- name: FileChunk
-- One chunk of a file's content. A download reads the chunks one query at a time, so a
-- slow client never holds a transaction or a pooled connection for long.
SELECT data FROM file_chunks WHERE file_id = $1 AND seq = $2
