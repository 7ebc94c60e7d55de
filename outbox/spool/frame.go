package spool

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// magic starts every frame; after damage the reader resynchronises on the next one.
var magic = [4]byte{'F', 'O', 'S', '1'}

const headerSize = 12 // magic + length + CRC32C

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frame wraps payload in magic, length and CRC32C.
func frame(payload []byte) []byte {
	b := make([]byte, headerSize+len(payload))
	copy(b, magic[:])
	binary.BigEndian.PutUint32(b[4:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[8:], crc32.Checksum(payload, castagnoli))
	copy(b[headerSize:], payload)
	return b
}

// badRange is a span of a segment that holds no valid frame: a torn tail, flipped bits,
// or a record of an unknown version. Its bytes are kept aside, never replayed.
type badRange struct {
	Off, End int
	Why      string
}

// frameAt checks the frame starting at off and returns its payload and the offset after it.
func frameAt(b []byte, off int) (payload []byte, next int, err error) {
	rest := b[off:]
	if len(rest) < headerSize {
		return nil, 0, fmt.Errorf("torn header: %d of %d bytes", len(rest), headerSize)
	}
	if !bytes.Equal(rest[:4], magic[:]) {
		return nil, 0, fmt.Errorf("no frame marker")
	}
	n := binary.BigEndian.Uint32(rest[4:])
	if n > maxRecord {
		return nil, 0, fmt.Errorf("length %d over the limit", n)
	}
	if uint64(len(rest)-headerSize) < uint64(n) {
		return nil, 0, fmt.Errorf("torn record: %d of %d payload bytes", len(rest)-headerSize, n)
	}
	payload = rest[headerSize : headerSize+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rest[8:]) {
		return nil, 0, fmt.Errorf("checksum mismatch")
	}
	return payload, off + headerSize + int(n), nil
}

// parsedRecord is one valid entry and where it sits in its segment.
type parsedRecord struct {
	Entry Entry
	Off   int
}

// parseSegment splits a segment's bytes into valid entries and bad ranges. A bad frame
// costs only the bytes up to the next marker that starts a valid frame.
func parseSegment(b []byte) ([]parsedRecord, []badRange) {
	var recs []parsedRecord
	var bad []badRange
	off := 0
	for off < len(b) {
		payload, next, err := frameAt(b, off)
		var e Entry
		if err == nil {
			e, err = decodeEntry(payload)
		}
		if err == nil {
			recs = append(recs, parsedRecord{Entry: e, Off: off})
			off = next
			continue
		}
		end := resync(b, off+1)
		bad = append(bad, badRange{Off: off, End: end, Why: err.Error()})
		off = end
	}
	return recs, bad
}

// resync finds the next offset at or after from where a whole valid frame starts, or the
// end of b.
func resync(b []byte, from int) int {
	for from < len(b) {
		i := bytes.Index(b[from:], magic[:])
		if i < 0 {
			return len(b)
		}
		at := from + i
		if payload, _, err := frameAt(b, at); err == nil {
			if _, err := decodeEntry(payload); err == nil {
				return at
			}
		}
		from = at + 1
	}
	return len(b)
}
