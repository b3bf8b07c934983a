package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

// completeTimeout bounds the one poll that completes a resource name or a value.
const completeTimeout = 2 * time.Second

// completeResources completes a command's RESOURCE argument with the resources held
// now (held, or held on some masters), from one read-only poll of the masters named by
// the --config or --masters typed so far (or the default config). Any error completes
// nothing: a completion never prints an error.
func completeResources(g *globalFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		none := cobra.ShellCompDirectiveNoFileComp
		if len(args) > 0 {
			return nil, none // the resource is typed already
		}
		var names []string
		for _, r := range completePoll(g) {
			if r.Holders > 0 && strings.HasPrefix(r.Resource, toComplete) {
				names = append(names, r.Resource)
			}
		}
		slices.Sort(names)
		return slices.Compact(names), none
	}
}

// completeValue completes --value with the values the RESOURCE typed before it holds
// now, on any master (from one read-only poll, as completeResources).
func completeValue(g *globalFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		none := cobra.ShellCompDirectiveNoFileComp
		if len(args) != 1 {
			return nil, none
		}
		var values []string
		for _, r := range completePoll(g) {
			if r.Resource != args[0] {
				continue
			}
			for _, n := range r.Nodes {
				if n.Value != "" && strings.HasPrefix(n.Value, toComplete) {
					values = append(values, n.Value)
				}
			}
		}
		slices.Sort(values)
		return slices.Compact(values), none
	}
}

// completePoll polls the masters of g once, read-only; nil on any error.
func completePoll(g *globalFlags) []inspect.Resource {
	cfg, pools, err := g.load()
	if err != nil {
		return nil
	}
	defer closePools(pools)
	p := poll.NewPoller(cfg, pools).WithoutEvents()
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	return p.Poll(ctx).Resources
}
