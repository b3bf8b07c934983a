package admin

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
)

// RestartAdvice explains an acquisition that the restart guard decided: which masters
// took it but were not counted because they restarted recently, how long ago, for how
// much longer they are not counted, and the two ways out (wait, or lock.restart_guard).
// It is "" when err is no such failure (or the guard did not decide it: a quorum did
// not take the lock even counting them).
func RestartAdvice(cfg *config.Config, err error) string {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Result.Count(redlock.OK) < qe.Quorum {
		return ""
	}
	var names []string
	var up, left time.Duration
	for _, n := range qe.Result.Nodes {
		var re *redlock.RestartedError
		if !errors.As(n.Err, &re) {
			continue
		}
		name := fmt.Sprintf("m%d", n.Master+1)
		if n.Master >= 0 && n.Master < len(cfg.Masters) {
			name = cfg.Masters[n.Master].Name
		}
		names = append(names, name)
		up, left = max(up, re.Uptime), max(left, re.Remaining)
	}
	if len(names) == 0 {
		return ""
	}
	do, they, are := "do", "they", "are"
	if len(names) == 1 {
		do, they, are = "does", "it", "is"
	}
	wait := left.Round(time.Second) + time.Second
	return fmt.Sprintf("%s restarted %s ago or less and %s not fsync every write, so %s may have forgotten locks %s granted: "+
		"%s %s not counted toward a quorum for another %s. Wait %s and try again, or turn the guard down with "+
		"lock.restart_guard in the config (--restart-guard 0s for one command) where restarts lose no lock, such as on throw-away masters",
		joinNames(names), roughly(up), do, they, they, they, are, roughly(left), wait)
}

// joinNames writes "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// roughly writes d in whole seconds (a master's uptime is known to the second), or
// "under 1s".
func roughly(d time.Duration) string {
	if d < time.Second {
		return "under 1s"
	}
	return d.Round(time.Second).String()
}
