// Package doccheck checks the repository's Markdown: every relative link
// resolves to a file, and every #anchor to a heading of the page it names
// (by GitHub's heading slugs) or to an explicit <a id> or <a name>.
// External links (a scheme such as https:) are not fetched.
//
// Its test, TestLinks, runs in `go test ./...` over every tracked *.md.
package doccheck
