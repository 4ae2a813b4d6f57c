package buffer

// Pending calls fn with every record not yet acknowledged, in append
// order, as far as the segments were committed when it was called. It
// moves neither the read position nor anything Next or Ack keep, and it
// reads about readBudget bytes at a time, whatever the spool holds. An
// error from fn stops it and is returned.
//
// It is meant for a caller that accounts for what is in the spool before
// it drains or appends (admission at start): records appended while it
// runs may be missed, and an Ack while it runs may remove a segment it is
// about to read (it then fails, and nothing is changed).
func (s *Spool) Pending(fn func(Entry) error) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	defer s.closeReader()
	type span struct {
		index uint64
		size  int64
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	from := s.ackNext
	spans := make([]span, 0, len(s.segs))
	for _, seg := range s.segs {
		if seg.index >= from.Segment {
			spans = append(spans, span{seg.index, seg.size})
		}
	}
	s.mu.Unlock()
	for _, sp := range spans {
		pos := Position{sp.index, segmentHeaderSize}
		if sp.index == from.Segment {
			pos.Offset = max(from.Offset, segmentHeaderSize)
		}
		for pos.Offset < sp.size {
			entries, end, err := s.read(pos, sp.size, readBudget, readBudget)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if err := fn(e); err != nil {
					return err
				}
			}
			pos.Offset = end
		}
	}
	return nil
}
