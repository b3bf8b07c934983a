package cli

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/inspect/poll"
)

// completeTimeout bounds the one poll that completes a resource name.
const completeTimeout = 2 * time.Second

// completeResources completes a subcommand's RESOURCE argument with the resources held
// now (held, or held on some masters), from one read-only poll of the masters named by
// the --config or --masters typed so far (or the default config). Any error completes
// nothing: a completion never prints an error.
func completeResources(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := addGlobalFlags(fs)
	pos, err := adminParse(fs, withoutUnknownFlags(args))
	if err != nil || len(pos) > 0 {
		return nil, none // the resource is typed already
	}
	cfg, pools, err := g.load()
	if err != nil {
		return nil, none
	}
	defer closePools(pools)
	p := poll.NewPoller(cfg, pools).WithoutEvents()
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	var names []string
	for _, r := range p.Poll(ctx).Resources {
		if r.Holders > 0 && strings.HasPrefix(r.Resource, toComplete) {
			names = append(names, r.Resource)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), none
}

// withoutUnknownFlags keeps only the global flags (and their values) and the
// positional arguments of a partial command line, so that it parses with the global
// flags alone.
func withoutUnknownFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
			continue
		}
		name, _, hasValue := strings.Cut(a, "=")
		takesValue, global := globalFlagNames[name]
		if !global {
			takesValue, global = globalFlagNames["-"+name]
		}
		if !global {
			continue
		}
		out = append(out, a)
		if takesValue && !hasValue && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}
