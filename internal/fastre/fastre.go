package fastre

import (
	"regexp"
	"regexp/syntax"
)

// Regexp is a compiled expression.
type Regexp struct {
	expr  string
	shape string
	re    *regexp.Regexp // matches when no shape does
	lits  *literals
	dfa   *dfa
}

// Shape names, as Shape returns them.
const (
	ShapeLiterals = "literals" // ^(a|b|c)$: the whole text is one of a few literals
	ShapePrefix   = "prefix"   // ^(a|b): the text starts with one of them
	ShapeSuffix   = "suffix"   // (a|b)$: the text ends with one of them
	ShapeContains = "contains" // a|b: the text contains one of them
	ShapeDFA      = "dfa"      // classes, literals and counts: a rune DFA
)

// Compile parses expr as regexp.Compile does, failing exactly when it fails.
func Compile(expr string) (*Regexp, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	r := &Regexp{expr: expr, re: re}
	// regexp.Compile parsed expr with these flags without an error.
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return r, nil
	}
	begin, end, body, ok := anchors(tree)
	if !ok {
		return r, nil
	}
	if l := literalSet(body, begin, end); l != nil {
		r.lits, r.re = l, nil
		r.shape = l.shape()
		return r, nil
	}
	if d := newDFA(body, begin, end); d != nil {
		r.dfa, r.re = d, nil
		r.shape = ShapeDFA
	}
	return r, nil
}

// MustCompile is Compile that panics on an error, for expressions in code.
func MustCompile(expr string) *Regexp {
	r, err := Compile(expr)
	if err != nil {
		panic("fastre: " + err.Error())
	}
	return r
}

// MatchString reports whether s contains a match of the expression, as
// regexp's MatchString does.
func (r *Regexp) MatchString(s string) bool {
	switch {
	case r.dfa != nil:
		return r.dfa.match(s)
	case r.lits != nil:
		return r.lits.match(s)
	}
	return r.re.MatchString(s)
}

// Shape names the recognised shape that matches without the regexp engine
// (one of the Shape constants), or "" when the expression is matched by
// regexp.
func (r *Regexp) Shape() string { return r.shape }

// String returns the expression's source text.
func (r *Regexp) String() string { return r.expr }

// anchors splits a leading \A (or ^ without the m flag) and a trailing \z
// (or $ without it) off the top of tree. ok is false when any other
// empty-width assertion is left in body, which the shapes do not handle.
func anchors(tree *syntax.Regexp) (begin, end bool, body *syntax.Regexp, ok bool) {
	for tree.Op == syntax.OpCapture {
		tree = tree.Sub[0]
	}
	subs := []*syntax.Regexp{tree}
	if tree.Op == syntax.OpConcat {
		subs = tree.Sub
	}
	if len(subs) > 0 && subs[0].Op == syntax.OpBeginText {
		begin, subs = true, subs[1:]
	}
	if len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText {
		end, subs = true, subs[:len(subs)-1]
	}
	switch len(subs) {
	case 0:
		body = &syntax.Regexp{Op: syntax.OpEmptyMatch}
	case 1:
		body = subs[0]
	default:
		body = &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
	}
	return begin, end, body, plain(body)
}

// plain reports whether re uses only operators the shapes handle: no
// anchors, word boundaries or no-match.
func plain(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return true
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat, syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !plain(sub) {
				return false
			}
		}
		return true
	}
	return false
}
