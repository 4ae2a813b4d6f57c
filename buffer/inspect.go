package buffer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// dirState is what a spool directory holds, read without changing it.
type dirState struct {
	cursor      *Position // nil when there is no valid cursor
	cursorErr   error     // set when a cursor file exists but is corrupt
	strays      []string  // temp files, relative to the directory
	quarantined []string  // files in quarantine/, relative to the directory
	segments    []segmentScan
}

// examine reads a spool directory: its cursor, and every segment, verified.
// It changes nothing.
func examine(dir string) (*dirState, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	st := &dirState{}
	var indexes []uint64
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
		case strings.HasSuffix(name, tempExt):
			st.strays = append(st.strays, name)
		default:
			if index, ok := parseSegmentName(name); ok {
				indexes = append(indexes, index) // ReadDir sorts by name, so by index
			}
		}
	}
	qentries, err := os.ReadDir(filepath.Join(dir, quarantineDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	for _, e := range qentries {
		name := filepath.Join(quarantineDir, e.Name())
		if strings.HasSuffix(name, tempExt) {
			st.strays = append(st.strays, name)
		} else {
			st.quarantined = append(st.quarantined, name)
		}
	}

	switch b, err := os.ReadFile(filepath.Join(dir, cursorName)); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("buffer: %w", err)
	default:
		if pos, err := decodeCursor(b); err != nil {
			st.cursorErr = err
		} else {
			st.cursor = &pos
		}
	}

	for _, index := range indexes {
		sc, err := scanFile(filepath.Join(dir, segmentName(index)), index, st.cursor)
		if err != nil {
			return nil, err
		}
		st.segments = append(st.segments, sc)
	}
	return st, nil
}

func scanFile(path string, index uint64, cursor *Position) (segmentScan, error) {
	f, err := os.Open(path)
	if err != nil {
		return segmentScan{}, fmt.Errorf("buffer: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return segmentScan{}, fmt.Errorf("buffer: %w", err)
	}
	sc, err := scanSegment(f, fi.Size(), index, cursor)
	if err != nil {
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			err = fmt.Errorf("buffer: reading %s: %w", path, err)
		}
		return sc, err
	}
	return sc, nil
}

// Report describes a spool directory as Inspect found it.
type Report struct {
	Dir      string
	Segments []SegmentReport
	// Cursor is the acknowledged position; nil when there is none, or when
	// the cursor file is corrupt (CursorErr), which Open treats as none.
	Cursor    *Position
	CursorErr error
	// PendingRecords and PendingBytes (frames) are the records after the
	// cursor that Open would keep.
	PendingRecords int64
	PendingBytes   int64
	// Corruption lists the damage found, one per damaged segment.
	Corruption []CorruptionError
	// StrayTempFiles are temp files left by a crash, which Open removes;
	// paths are relative to Dir.
	StrayTempFiles []string
	// Quarantined are the files in quarantine/, relative to Dir.
	Quarantined []string
}

// SegmentReport describes one segment file.
type SegmentReport struct {
	Name string
	Size int64
	// Records are the records that verify before any damage.
	Records                         int
	FirstAppendedAt, LastAppendedAt time.Time // zero when Records is 0
	// Damage is nil when the whole file verifies.
	Damage *CorruptionError
	// Repair is what Open does about the damage: "truncate" for a torn
	// tail of the last segment, "delete (acknowledged)" for a segment
	// wholly before the cursor's, "quarantine" otherwise; "" when none.
	Repair string
	// LostRecords and LostBytes are what lies past the damage (records
	// counted as sluice_spool_quarantined_records_total counts them).
	LostRecords int
	LostBytes   int64
}

// Inspect reads the spool in dir and reports its state. It changes
// nothing: no repair, no lock; run on a spool that is open, it may see a
// torn tail that is only an append in progress.
func Inspect(dir string) (Report, error) {
	st, err := examine(dir)
	if err != nil {
		return Report{}, err
	}
	r := Report{
		Dir:            dir,
		Cursor:         st.cursor,
		CursorErr:      st.cursorErr,
		StrayTempFiles: st.strays,
		Quarantined:    st.quarantined,
	}
	for i, sc := range st.segments {
		sr := SegmentReport{Name: sc.name, Size: sc.size, Records: sc.records}
		if sc.records > 0 {
			sr.FirstAppendedAt = time.Unix(0, sc.firstTS).UTC()
			sr.LastAppendedAt = time.Unix(0, sc.lastTS).UTC()
		}
		if sc.damage != nil {
			sr.Damage = sc.damage
			switch {
			case st.cursor != nil && sc.index < st.cursor.Segment:
				sr.Repair = "delete (acknowledged)"
			case i == len(st.segments)-1 && sc.tornTail():
				sr.Repair = "truncate"
			default:
				sr.Repair = "quarantine"
			}
			sr.LostRecords, sr.LostBytes = sc.lostRecords, sc.lostBytes()
			r.Corruption = append(r.Corruption, *sc.damage)
		}
		r.PendingRecords += int64(sc.pendingRecords)
		r.PendingBytes += sc.pendingBytes
		r.Segments = append(r.Segments, sr)
	}
	return r, nil
}

// String renders the report as WriteTo does.
func (r Report) String() string {
	var b strings.Builder
	_, _ = r.WriteTo(&b)
	return b.String()
}

// WriteTo writes the report as a table of segments followed by the cursor,
// the pending records, the damage and the stray and quarantined files.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	fmt.Fprintf(cw, "spool %s\n\n", r.Dir)
	tw := tabwriter.NewWriter(cw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEGMENT\tBYTES\tRECORDS\tFIRST APPENDED\tLAST APPENDED\tSTATE")
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339Nano)
	}
	for _, s := range r.Segments {
		state := "ok"
		if s.Damage != nil {
			state = fmt.Sprintf("damaged at %d (%s); %d records, %d bytes after it; open will %s",
				s.Damage.Offset, strings.TrimPrefix(s.Damage.Err.Error(), "buffer: "),
				s.LostRecords, s.LostBytes, s.Repair)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", s.Name, s.Size, s.Records,
			stamp(s.FirstAppendedAt), stamp(s.LastAppendedAt), state)
	}
	if len(r.Segments) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t")
	}
	_ = tw.Flush()

	fmt.Fprintln(cw)
	switch {
	case r.Cursor != nil:
		fmt.Fprintf(cw, "cursor:       %s offset %d\n", segmentName(r.Cursor.Segment), r.Cursor.Offset)
	case r.CursorErr != nil:
		fmt.Fprintf(cw, "cursor:       none (%s; open starts from the first record)\n",
			strings.TrimPrefix(r.CursorErr.Error(), "buffer: "))
	default:
		fmt.Fprintln(cw, "cursor:       none")
	}
	fmt.Fprintf(cw, "pending:      %d records, %d bytes\n", r.PendingRecords, r.PendingBytes)
	fmt.Fprintf(cw, "corruption:   %d\n", len(r.Corruption))
	for _, c := range r.Corruption {
		fmt.Fprintf(cw, "  %s\n", c.Error())
	}
	list := func(label string, names []string) {
		if len(names) == 0 {
			fmt.Fprintf(cw, "%-14snone\n", label+":")
			return
		}
		fmt.Fprintf(cw, "%-14s%s\n", label+":", strings.Join(names, ", "))
	}
	list("stray temp", r.StrayTempFiles)
	list("quarantined", r.Quarantined)
	return cw.n, cw.err
}

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
