package buffer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// The on-disk format; doc.go describes it. Every integer is little-endian;
// CRC is CRC-32C (Castagnoli).
//
// A segment starts with a 24-byte header:
//
//	offset size
//	0      4    magic "SLSG"
//	4      2    format version, 1
//	6      2    reserved, 0
//	8      8    segment index, equal to the file name's
//	16     4    CRC of bytes 0-15
//	20     4    reserved, 0
//
// followed by records, each in one frame:
//
//	offset size
//	0      4    n, the record's length
//	4      4    ^n, the bitwise complement of n
//	8      8    append time, Unix nanoseconds
//	16     4    CRC of bytes 0-15 and the record
//	20     n    the record
//	20+n   p    zero padding, so that every frame starts 8-byte aligned
//
// The cursor file is 32 bytes: magic "SLCU", version (2 bytes), 2
// reserved, segment index (8), offset (8) of the last acknowledged record,
// CRC of bytes 0-23 (4), 4 reserved.
const (
	formatVersion = 1

	segmentHeaderSize = 24
	frameHeaderSize   = 20
	frameAlign        = 8
	cursorSize        = 32

	// maxFrameRecordBytes bounds a record's length field when reading,
	// whatever Config.MaxRecordBytes is now: lowering the limit must not turn
	// records written under a higher one into corruption.
	maxFrameRecordBytes = 64 << 20

	segmentExt    = ".seg"
	tempExt       = ".tmp"
	cursorName    = "cursor"
	lockName      = "LOCK"
	quarantineDir = "quarantine"
)

var (
	segmentMagic = [4]byte{'S', 'L', 'S', 'G'}
	cursorMagic  = [4]byte{'S', 'L', 'C', 'U'}
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
)

// segmentName is the file name of segment index: 20 digits, so that names
// sort in index order.
func segmentName(index uint64) string {
	return fmt.Sprintf("%020d%s", index, segmentExt)
}

// parseSegmentName returns the index of a segment file name, and false for
// any other name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	index, err := strconv.ParseUint(digits, 10, 64)
	return index, err == nil
}

// frameSize is the bytes a record of n payload bytes takes in a segment:
// header, payload and zero padding to the next 8-byte boundary.
func frameSize(n int) int64 {
	size := int64(frameHeaderSize) + int64(n)
	return (size + frameAlign - 1) &^ (frameAlign - 1)
}

func encodeSegmentHeader(index uint64) []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b[0:4], segmentMagic[:])
	binary.LittleEndian.PutUint16(b[4:6], formatVersion)
	binary.LittleEndian.PutUint64(b[8:16], index)
	binary.LittleEndian.PutUint32(b[16:20], crc32.Checksum(b[0:16], castagnoli))
	return b
}

// checkSegmentHeader verifies a segment header read from the file of
// segment index. A header that verifies but names another format version is
// errVersion, not corruption.
func checkSegmentHeader(b []byte, index uint64) error {
	if len(b) < segmentHeaderSize {
		return errShortHeader
	}
	if [4]byte(b[0:4]) != segmentMagic ||
		binary.LittleEndian.Uint32(b[16:20]) != crc32.Checksum(b[0:16], castagnoli) {
		return errBadHeader
	}
	if v := binary.LittleEndian.Uint16(b[4:6]); v != formatVersion {
		return fmt.Errorf("%w: version %d, this build reads %d", errVersion, v, formatVersion)
	}
	if got := binary.LittleEndian.Uint64(b[8:16]); got != index {
		return fmt.Errorf("%w: header names segment %d", errBadHeader, got)
	}
	return nil
}

// appendFrame appends the frame of one record appended at unixNano to dst.
func appendFrame(dst, payload []byte, unixNano int64) []byte {
	start := len(dst)
	n := uint32(len(payload))
	var hdr [frameHeaderSize]byte
	binary.LittleEndian.PutUint32(hdr[0:4], n)
	binary.LittleEndian.PutUint32(hdr[4:8], ^n)
	binary.LittleEndian.PutUint64(hdr[8:16], uint64(unixNano))
	crc := crc32.Update(crc32.Checksum(hdr[0:16], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(hdr[16:20], crc)
	dst = append(dst, hdr[:]...)
	dst = append(dst, payload...)
	for int64(len(dst)-start) < frameSize(len(payload)) {
		dst = append(dst, 0)
	}
	return dst
}

// frameLength reads and bounds-checks the length field of a frame header:
// the length must match its complement and be at most maxFrameRecordBytes.
// It says nothing about whether the frame fits in the file.
func frameLength(hdr []byte) (int, bool) {
	n := binary.LittleEndian.Uint32(hdr[0:4])
	if binary.LittleEndian.Uint32(hdr[4:8]) != ^n || n > maxFrameRecordBytes {
		return 0, false
	}
	return int(n), true
}

// frameValid reports whether the payload matches the checksum in hdr.
// The length in hdr must already have been checked with frameLength.
func frameValid(hdr, payload []byte) bool {
	crc := crc32.Update(crc32.Checksum(hdr[0:16], castagnoli), castagnoli, payload)
	return crc == binary.LittleEndian.Uint32(hdr[16:20])
}

func frameTime(hdr []byte) int64 { return int64(binary.LittleEndian.Uint64(hdr[8:16])) }

func encodeCursor(p Position) []byte {
	b := make([]byte, cursorSize)
	copy(b[0:4], cursorMagic[:])
	binary.LittleEndian.PutUint16(b[4:6], formatVersion)
	binary.LittleEndian.PutUint64(b[8:16], p.Segment)
	binary.LittleEndian.PutUint64(b[16:24], uint64(p.Offset))
	binary.LittleEndian.PutUint32(b[24:28], crc32.Checksum(b[0:24], castagnoli))
	return b
}

// decodeCursor decodes a cursor file. Any damage is errBadCursor.
func decodeCursor(b []byte) (Position, error) {
	if len(b) != cursorSize || [4]byte(b[0:4]) != cursorMagic ||
		binary.LittleEndian.Uint32(b[24:28]) != crc32.Checksum(b[0:24], castagnoli) {
		return Position{}, errBadCursor
	}
	if v := binary.LittleEndian.Uint16(b[4:6]); v != formatVersion {
		return Position{}, fmt.Errorf("%w: version %d", errBadCursor, v)
	}
	p := Position{
		Segment: binary.LittleEndian.Uint64(b[8:16]),
		Offset:  int64(binary.LittleEndian.Uint64(b[16:24])),
	}
	if p.Offset < segmentHeaderSize {
		return Position{}, fmt.Errorf("%w: offset %d", errBadCursor, p.Offset)
	}
	return p, nil
}

func timeFromNanos(ns int64) time.Time { return time.Unix(0, ns) }
