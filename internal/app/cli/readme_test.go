package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxBytes bounds the README: a front door (what it is, install, the demo, five
// minutes on real masters, the commands, links); everything else lives in docs/.
const readmeMaxBytes = 20000

// The README stays a front door, and every guide in docs/ is linked from it.
func TestReadmeIsAFrontDoor(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(readme) > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, more than %d: move the detail to a guide in docs/", len(readme), readmeMaxBytes)
	}
	guides, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if len(guides) < 10 {
		t.Fatalf("docs/ holds %d guides; want at least 10", len(guides))
	}
	for _, g := range guides {
		link := "(docs/" + filepath.Base(g)
		if !strings.Contains(string(readme), link+")") && !strings.Contains(string(readme), link+"#") {
			t.Errorf("README.md does not link docs/%s", filepath.Base(g))
		}
	}
}

// Every relative link in the README and the guides names a file that exists, and every
// #anchor a heading of that file.
func TestDocLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"), filepath.Join(root, "CHANGELOG.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s: no such file", filepath.Base(page), target)
				continue
			}
			if anchor == "" {
				continue
			}
			body, err := os.ReadFile(path)
			if err != nil || !strings.HasSuffix(path, ".md") {
				t.Errorf("%s links %s: an anchor in a file that is no markdown page", filepath.Base(page), target)
				continue
			}
			if !anchors(string(body))[anchor] {
				t.Errorf("%s links %s: %s has no heading with that anchor", filepath.Base(page), target, filepath.Base(path))
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links checked: the check proves little", checked)
	}
}

// anchors returns the anchors GitHub gives a markdown page's headings (outside code
// blocks): lower case, spaces to hyphens, punctuation other than - and _ dropped.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
