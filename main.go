// Command redlockctl inspects and administers Redlock distributed locks held across N
// independent Redis masters: a live console, a scriptable dump, a doctor, a Prometheus
// exporter, and admin subcommands that act through the redlock library.
package main

import (
	"fmt"
	"os"

	"github.com/redlockctl/redlockctl/internal/app/cli"
	"github.com/redlockctl/redlockctl/internal/debugvars"
)

func main() {
	// $REDLOCKCTL_DEBUG_ADDR: the process's runtime figures on loopback, for soak tests.
	if addr := os.Getenv(debugvars.Env); addr != "" {
		if err := debugvars.Start(addr); err != nil {
			fmt.Fprintln(os.Stderr, "redlockctl:", err)
			os.Exit(2)
		}
	}
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
