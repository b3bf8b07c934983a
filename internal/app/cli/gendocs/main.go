// Command gendocs writes redlockctl's man pages and markdown reference (make docs):
// gendocs DIR writes DIR/man and DIR/cli.
package main

import (
	"fmt"
	"os"

	"github.com/redlockctl/redlockctl/internal/app/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR")
		os.Exit(2)
	}
	if err := cli.GenDocs(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
