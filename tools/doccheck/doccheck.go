package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Problem is one link that does not resolve.
type Problem struct {
	File string // relative to the root, slash-separated
	Line int
	Link string
	Why  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Link, p.Why) }

// Link is one link of a page.
type Link struct {
	Line   int
	Target string
}

// Page is what a Markdown file offers and asks: its anchors and its links.
type Page struct {
	Anchors map[string]bool
	Links   []Link
}

var (
	fence      = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*$`)
	closingATX = regexp.MustCompile(`[ \t]+#+$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)\s*=\s*"([^"]+)"`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Parse reads a Markdown page: headings (outside code blocks) become
// anchors by GitHub's rules, <a id|name> anchors are kept as written, and
// inline links, images and reference definitions outside code are its links.
func Parse(src []byte) Page {
	p := Page{Anchors: map[string]bool{}}
	seen := map[string]int{}
	var open string // the fence that opened the current code block
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[strings.Index(line, m[1])+len(m[1]):]) == "":
				open = ""
				continue
			}
		}
		if open != "" {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			p.Anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := Slug(closingATX.ReplaceAllString(m[2], ""))
			if k := seen[s]; k > 0 {
				seen[s] = k + 1
				s = fmt.Sprintf("%s-%d", s, k)
			} else {
				seen[s] = 1
			}
			p.Anchors[s] = true
		}
		text := codeSpan.ReplaceAllString(line, "")
		if m := refDef.FindStringSubmatch(text); m != nil {
			p.Links = append(p.Links, Link{n, strings.Trim(m[1], "<>")})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			p.Links = append(p.Links, Link{n, strings.Trim(m[2], "<>")})
		}
	}
	return p
}

// Slug is GitHub's anchor for a heading's text: the text as rendered
// (code spans without their backticks, a link as its text, no emphasis
// markers), lower-cased, every character but letters, digits, marks,
// spaces, '-' and '_' dropped, and each space made '-'. Parse adds -1,
// -2, ... to repeats.
func Slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Check resolves every relative link of files (slash-separated, relative
// to root).
func Check(root string, files []string) ([]Problem, error) {
	pages := map[string]Page{}
	page := func(rel string) (Page, error) {
		if p, ok := pages[rel]; ok {
			return p, nil
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return Page{}, err
		}
		p := Parse(src)
		pages[rel] = p
		return p, nil
	}
	var problems []Problem
	for _, file := range files {
		p, err := page(file)
		if err != nil {
			return nil, err
		}
		for _, l := range p.Links {
			if why := resolve(root, file, l.Target, page); why != "" {
				problems = append(problems, Problem{file, l.Line, l.Target, why})
			}
		}
	}
	sort.Slice(problems, func(i, j int) bool {
		if problems[i].File != problems[j].File {
			return problems[i].File < problems[j].File
		}
		return problems[i].Line < problems[j].Line
	})
	return problems, nil
}

// resolve says why target, a link in file, does not resolve, or "".
func resolve(root, file, target string, page func(string) (Page, error)) string {
	if target == "" {
		return "empty link"
	}
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // external: not fetched
	}
	path, anchor, hasAnchor := strings.Cut(target, "#")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	rel := file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			rel = strings.TrimPrefix(path, "/")
		} else {
			rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), filepath.FromSlash(path))))
		}
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "leaves the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return "no such file " + rel
		}
	}
	if !hasAnchor || !strings.HasSuffix(rel, ".md") {
		return "" // GitHub's line anchors (#L10) of other files are not checked
	}
	p, err := page(rel)
	if err != nil {
		return err.Error()
	}
	if !p.Anchors[anchor] {
		return "no heading or <a id> " + anchor + " in " + rel
	}
	return ""
}
