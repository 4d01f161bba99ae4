package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link or image: its target, up to a space or ")".
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks checks every relative link of the README and of docs/*.md:
// the file it names exists and, with #anchor, has a heading of that
// anchor (GitHub's rule), so that moving a section cannot leave a link
// pointing nowhere. The README stays one screen: at most 400 lines.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, page := range pages {
		text := readText(t, page)
		for _, target := range links(text) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			if anchor != "" && !headingAnchors(readText(t, path))[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", page, target, path, anchor)
			}
		}
	}
	if n := strings.Count(readText(t, filepath.Join(root, "README.md")), "\n"); n > 400 {
		t.Errorf("README.md has %d lines; at most 400 (the rest belongs in docs/)", n)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// links are the link targets of a Markdown text outside its code blocks.
func links(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives a Markdown text's headings:
// lower case, punctuation but - and _ dropped, spaces made hyphens.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		out[b.String()] = true
	}
	return out
}
