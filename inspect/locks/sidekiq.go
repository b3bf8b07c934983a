package locks

import (
	"sort"
	"strings"
)

// decodeSidekiq recognises sidekiq-unique-jobs (v7+): the hash
// `uniquejobs:<digest>:LOCKED` whose fields are the job ids holding the lock (Sidekiq jids,
// 24 hex characters) with the lock's metadata as values; `:QUEUED`, `:PRIMED` and `:INFO`
// beside it are companions. Verified against mhenrixon/sidekiq-unique-jobs
// lib/sidekiq_unique_jobs/key.rb, lua/lock.lua and constants.rb at commit
// 76aa8c947b8318ebbc5fa021be240097d7a926b3.
//
// Its unlock also maintains the digests sorted set and the queued/primed lists, so
// redlockctl shows these locks but leaves releasing them to the library's own tools.
func decodeSidekiq(in input) (Lock, bool) {
	if !hasPrefix(in.Key, "uniquejobs:") || !strings.HasSuffix(in.Key, ":LOCKED") || in.Truncated {
		return Lock{}, false
	}
	jids := make([]string, 0, len(in.Fields))
	for f := range in.Fields {
		if len(f) != 24 || !isHex(f) {
			return Lock{}, false
		}
		jids = append(jids, f)
	}
	if len(jids) == 0 {
		return Lock{}, false
	}
	sort.Strings(jids)
	l := Lock{
		Library:  SidekiqUniqueJobs,
		Evidence: "hash uniquejobs:<digest>:LOCKED with job id fields, as sidekiq-unique-jobs writes it",
		Holder:   strings.Join(jids, ","),
		Owner:    "job " + jids[0],
		Renewal:  "none: held until the job's lock type releases it (or its lock_ttl passes)",
		Release: unsupported("sidekiq-unique-jobs keeps a digests set and queues beside the lock: " +
			"release it with the library's own tools (SidekiqUniqueJobs::Digests#delete_by_digest or its web UI)"),
	}
	for _, j := range jids {
		l.Fields = append(l.Fields, Field{"job " + j, in.Fields[j]})
	}
	return l, true
}
