package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// docsDate is the date the generated man pages carry: fixed, so that regenerating them
// changes nothing until a command does.
var docsDate = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)

// GenDocs writes the man pages (section 1) into dir/man and a markdown reference into
// dir/cli, one file per command, from the same command tree the binary runs.
func GenDocs(dir string) error {
	code := 0
	root := newRoot(io.Discard, io.Discard, &code)
	root.InitDefaultCompletionCmd()
	// Defaults that depend on the machine are written as the variable they come from.
	tmp := os.TempDir()
	for _, c := range append(root.Commands(), root) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			f.DefValue = strings.Replace(f.DefValue, tmp, "$TMPDIR", 1)
		})
	}
	man, md := filepath.Join(dir, "man"), filepath.Join(dir, "cli")
	for _, d := range []string{man, md} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	header := &doc.GenManHeader{Title: "REDLOCKCTL", Section: "1", Date: &docsDate, Source: "redlockctl", Manual: "redlockctl manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return err
	}
	return doc.GenMarkdownTree(root, md)
}
