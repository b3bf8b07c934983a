// Command redlockctl inspects and administers Redlock distributed locks held across N
// independent Redis masters: a live console, a scriptable dump, a doctor, a Prometheus
// exporter, and admin subcommands that act through the redlock library.
package main

import (
	"os"

	"github.com/redlockctl/redlockctl/internal/cli"
)

func main() { os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr)) }
