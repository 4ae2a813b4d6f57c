package fastre

import (
	"math/bits"
	"regexp/syntax"
	"sort"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Limits past which an expression is left to regexp.
const (
	maxNFAStates = 2048
	maxDFAStates = 1024
	maxTable     = 1 << 16 // DFA states × rune classes
	maxClasses   = 4096
	maxWork      = 1 << 19 // NFA states moved and closed over in subset construction
)

// dfa is a deterministic automaton over runes. Runes are grouped into classes
// that every character set of the expression treats alike; the input is read
// as regexp reads it, each invalid UTF-8 byte one U+FFFD.
type dfa struct {
	ascii  [utf8.RuneSelf]uint16 // class of each ASCII rune
	bounds []rune                // class i starts at bounds[i]; bounds[0] == 0
	n      int                   // classes
	next   []uint16              // next[state*n+class]; state 0 is dead
	accept []bool
	start  uint16
	// end: a match must end at the end of the text; otherwise the first
	// accepting state reached decides.
	end bool
}

func (d *dfa) class(r rune) int {
	return sort.Search(len(d.bounds), func(i int) bool { return d.bounds[i] > r }) - 1
}

func (d *dfa) match(s string) bool {
	if !d.end {
		return d.search(s)
	}
	// Rows are indexed by state*n; row 0 is the dead state.
	n := d.n
	st := int(d.start)
	for i := 0; i < len(s); {
		var c int
		if b := s[i]; b < utf8.RuneSelf {
			c = int(d.ascii[b])
			i++
		} else {
			r, w := utf8.DecodeRuneInString(s[i:])
			c = d.class(r)
			i += w
		}
		st = int(d.next[st*n+c])
		if st == 0 {
			return false
		}
	}
	return d.accept[st]
}

// search is match without the end anchor: the first accepting state decides.
func (d *dfa) search(s string) bool {
	n := d.n
	st := int(d.start)
	if d.accept[st] {
		return true
	}
	for i := 0; i < len(s); {
		var c int
		if b := s[i]; b < utf8.RuneSelf {
			c = int(d.ascii[b])
			i++
		} else {
			r, w := utf8.DecodeRuneInString(s[i:])
			c = d.class(r)
			i += w
		}
		st = int(d.next[st*n+c])
		if st == 0 {
			return false
		}
		if d.accept[st] {
			return true
		}
	}
	return false
}

// nfa is a Thompson automaton: a state either reads one rune of a set and
// goes to out, or moves to out and alt without reading (alt < 0: to out only),
// or is the match state.
type nfa struct {
	states []nstate
}

type nstate struct {
	ranges []rune // pairs lo, hi; nil for a state that reads nothing
	read   bool
	match  bool
	out    int
	alt    int
}

// frag is a compiled piece: its start state and the states whose out (or
// alt) is still to be patched.
type frag struct {
	start int
	holes []hole
}

type hole struct {
	state int
	alt   bool
}

func (m *nfa) add(s nstate) int {
	m.states = append(m.states, s)
	return len(m.states) - 1
}

func (m *nfa) patch(hs []hole, to int) {
	for _, h := range hs {
		if h.alt {
			m.states[h.state].alt = to
		} else {
			m.states[h.state].out = to
		}
	}
}

func (m *nfa) empty() frag {
	s := m.add(nstate{out: -1, alt: -1})
	return frag{s, []hole{{s, false}}}
}

func (m *nfa) read(ranges []rune) frag {
	s := m.add(nstate{ranges: ranges, read: true, out: -1, alt: -1})
	return frag{s, []hole{{s, false}}}
}

func (m *nfa) cat(a, b frag) frag {
	m.patch(a.holes, b.start)
	return frag{a.start, b.holes}
}

func (m *nfa) or(a, b frag) frag {
	s := m.add(nstate{out: a.start, alt: b.start})
	return frag{s, append(append([]hole(nil), a.holes...), b.holes...)}
}

func (m *nfa) quest(a frag) frag {
	s := m.add(nstate{out: a.start, alt: -1})
	return frag{s, append(append([]hole(nil), a.holes...), hole{s, true})}
}

func (m *nfa) star(a frag) frag {
	s := m.add(nstate{out: a.start, alt: -1})
	m.patch(a.holes, s)
	return frag{s, []hole{{s, true}}}
}

var anyRune = []rune{0, unicode.MaxRune}
var anyButNL = []rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}

// compile builds re's fragment; ok is false when the automaton grows too big.
func (m *nfa) compile(re *syntax.Regexp) (frag, bool) {
	if len(m.states) > maxNFAStates {
		return frag{}, false
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return m.empty(), true
	case syntax.OpLiteral:
		f := m.empty()
		for _, r := range re.Rune {
			f = m.cat(f, m.read(literalRanges(r, re.Flags&syntax.FoldCase != 0)))
		}
		return f, true
	case syntax.OpCharClass:
		return m.read(re.Rune), true
	case syntax.OpAnyChar:
		return m.read(anyRune), true
	case syntax.OpAnyCharNotNL:
		return m.read(anyButNL), true
	case syntax.OpCapture:
		return m.compile(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		f, ok := m.compile(re.Sub[0])
		if !ok {
			return f, false
		}
		switch re.Op {
		case syntax.OpStar:
			return m.star(f), true
		case syntax.OpQuest:
			return m.quest(f), true
		}
		g, ok := m.compile(re.Sub[0])
		return m.cat(f, m.star(g)), ok
	case syntax.OpRepeat:
		// x{n,m} is n copies of x, then m-n nested optional ones; x{n,} is
		// n copies then x*.
		f := m.empty()
		for i := 0; i < re.Min; i++ {
			g, ok := m.compile(re.Sub[0])
			if !ok {
				return f, false
			}
			f = m.cat(f, g)
		}
		if re.Max < 0 {
			g, ok := m.compile(re.Sub[0])
			return m.cat(f, m.star(g)), ok
		}
		var tail frag
		for i := re.Min; i < re.Max; i++ {
			g, ok := m.compile(re.Sub[0])
			if !ok {
				return f, false
			}
			if i > re.Min {
				g = m.cat(g, tail)
			}
			tail = m.quest(g)
		}
		if re.Max > re.Min {
			f = m.cat(f, tail)
		}
		return f, true
	case syntax.OpConcat:
		f := m.empty()
		for _, sub := range re.Sub {
			g, ok := m.compile(sub)
			if !ok {
				return f, false
			}
			f = m.cat(f, g)
		}
		return f, true
	case syntax.OpAlternate:
		var f frag
		for i, sub := range re.Sub {
			g, ok := m.compile(sub)
			if !ok {
				return f, false
			}
			if i == 0 {
				f = g
			} else {
				f = m.or(f, g)
			}
		}
		return f, true
	}
	return frag{}, false
}

// literalRanges is the set a literal rune matches: itself, or under (?i)
// every rune of its simple case-folding orbit, as regexp matches it.
func literalRanges(r rune, fold bool) []rune {
	rs := []rune{r}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			rs = append(rs, f)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	out := make([]rune, 0, 2*len(rs))
	for _, x := range rs {
		out = append(out, x, x)
	}
	return out
}

// newDFA builds the DFA of body, searched for anywhere unless begin, and
// required to end the text when end; nil when it is too big.
func newDFA(body *syntax.Regexp, begin, end bool) *dfa {
	m := &nfa{}
	f, ok := m.compile(body)
	if !ok || len(m.states) > maxNFAStates {
		return nil
	}
	m.patch(f.holes, m.add(nstate{match: true, out: -1, alt: -1}))

	// Rune classes: cut the rune space at every range's ends.
	cuts := map[rune]bool{0: true}
	for _, s := range m.states {
		for i := 0; i+1 < len(s.ranges); i += 2 {
			cuts[s.ranges[i]] = true
			if s.ranges[i+1] < unicode.MaxRune {
				cuts[s.ranges[i+1]+1] = true
			}
		}
	}
	if len(cuts) > maxClasses {
		return nil
	}
	d := &dfa{end: end}
	for r := range cuts {
		d.bounds = append(d.bounds, r)
	}
	sort.Slice(d.bounds, func(i, j int) bool { return d.bounds[i] < d.bounds[j] })
	d.n = len(d.bounds)
	for r := rune(0); r < utf8.RuneSelf; r++ {
		d.ascii[r] = uint16(d.class(r))
	}

	// Each reading state's set of classes, as a bitmap.
	words := (d.n + 63) / 64
	classes := make([][]uint64, len(m.states))
	for i, s := range m.states {
		if !s.read {
			continue
		}
		classes[i] = make([]uint64, words)
		// A range covers whole classes, from its low end's to its high end's.
		for k := 0; k+1 < len(s.ranges); k += 2 {
			for c := d.class(s.ranges[k]); c <= d.class(s.ranges[k+1]); c++ {
				classes[i][c/64] |= 1 << (c % 64)
			}
		}
	}

	// Subset construction. A search (no begin anchor) may start a match at
	// every rune, so the start states join every step. work bounds the
	// time spent on an expression that would make a large automaton.
	cl := newCloser(m)
	var sets [][]int
	index := map[string]uint16{}
	var key []byte
	intern := func(set []int) (uint16, bool) {
		if len(set) == 0 {
			return 0, true
		}
		key = key[:0]
		for _, s := range set {
			key = strconv.AppendInt(key, int64(s), 10)
			key = append(key, ',')
		}
		if id, ok := index[string(key)]; ok {
			return id, true
		}
		if len(sets) >= maxDFAStates || (len(sets)+2)*d.n > maxTable {
			return 0, false
		}
		sets = append(sets, set)
		id := uint16(len(sets)) // 0 is the dead state
		index[string(key)] = id
		d.accept = append(d.accept, false)
		d.next = append(d.next, make([]uint16, d.n)...)
		return id, true
	}
	d.accept = []bool{false}
	d.next = make([]uint16, d.n)
	if d.start, ok = intern(cl.closure([]int{f.start})); !ok {
		return nil
	}
	moved := make([][]int, d.n)
	work := 0
	for id := 1; id <= len(sets); id++ {
		set := sets[id-1]
		for c := range moved {
			moved[c] = moved[c][:0]
		}
		for _, s := range set {
			st := m.states[s]
			if st.match {
				d.accept[id] = true
				continue
			}
			for w, word := range classes[s] {
				for word != 0 {
					c := w*64 + bitsTrailing(word)
					word &= word - 1
					moved[c] = append(moved[c], st.out)
				}
			}
		}
		if !end && d.accept[id] {
			// A search stops at the first accepting state: its row is
			// never read.
			continue
		}
		for c := 0; c < d.n; c++ {
			if !begin {
				moved[c] = append(moved[c], f.start)
			}
			work += len(moved[c]) + 1
			if work > maxWork {
				return nil
			}
			set := cl.closure(moved[c])
			if work += len(set); work > maxWork {
				return nil
			}
			next, ok := intern(set)
			if !ok {
				return nil
			}
			d.next[id*d.n+c] = next
		}
	}
	return d
}

func bitsTrailing(x uint64) int { return bits.TrailingZeros64(x) }

// closer computes closures, reusing its marks.
type closer struct {
	m     *nfa
	mark  []uint32
	gen   uint32
	stack []int
}

func newCloser(m *nfa) *closer { return &closer{m: m, mark: make([]uint32, len(m.states))} }

// closure returns the sorted states reachable from from without reading,
// keeping only those that read or match.
func (c *closer) closure(from []int) []int {
	c.gen++
	var out []int
	c.stack = append(c.stack[:0], from...)
	for len(c.stack) > 0 {
		s := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		if s < 0 || c.mark[s] == c.gen {
			continue
		}
		c.mark[s] = c.gen
		st := c.m.states[s]
		if st.read || st.match {
			out = append(out, s)
			continue
		}
		c.stack = append(c.stack, st.alt, st.out)
	}
	sort.Ints(out)
	return out
}
