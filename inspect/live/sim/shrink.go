package sim

import "time"

// Shrink returns a smaller schedule that still fails as s does (Check finds a
// disagreement of the same kind as s's first): one workload instead of several, no
// faults, notifications off, a shorter active time, fewer masters' worth of lag. It
// tries each step once, greedily, and keeps those that still fail. The result prints
// with %#v as a Go literal, for a regression test.
func Shrink(s Schedule) Schedule {
	kind := firstKind(s)
	if kind == "" {
		return s
	}
	fails := func(c Schedule) bool { return firstKind(c) == kind }
	try := func(c Schedule) bool {
		if fails(c) {
			s = c
			return true
		}
		return false
	}
	for _, w := range s.Workloads {
		if len(s.Workloads) > 1 && try(with(s, func(c *Schedule) { c.Workloads = []string{w} })) {
			break
		}
	}
	if len(s.Faults) > 0 {
		try(with(s, func(c *Schedule) { c.Faults = nil }))
	}
	if s.FeedStall != nil {
		try(with(s, func(c *Schedule) { c.FeedStall = nil }))
	}
	if len(s.Stalls) > 0 {
		try(with(s, func(c *Schedule) { c.Stalls = nil }))
	}
	if s.Keyspace {
		try(with(s, func(c *Schedule) { c.Keyspace = false }))
	}
	for s.Active > 200*time.Millisecond && try(with(s, func(c *Schedule) { c.Active /= 2 })) {
	}
	for i := range s.Masters {
		if s.Sub[i].Jitter > 0 {
			try(with(s, func(c *Schedule) { c.Sub[i].Jitter = 0 }))
		}
		if s.Client[i].Jitter > 0 {
			try(with(s, func(c *Schedule) { c.Client[i].Jitter = 0 }))
		}
	}
	return s
}

// with returns a copy of s changed by f (its slices copied first).
func with(s Schedule, f func(*Schedule)) Schedule {
	c := s
	c.Sub = append([]Latency(nil), s.Sub...)
	c.Client = append([]Latency(nil), s.Client...)
	c.Cost = append([]time.Duration(nil), s.Cost...)
	c.Workloads = append([]string(nil), s.Workloads...)
	c.Faults = append([]Fault(nil), s.Faults...)
	c.Stalls = append([]Stall(nil), s.Stalls...)
	f(&c)
	return c
}

// firstKind is the kind of the first disagreement Check finds in s ("" for none).
func firstKind(s Schedule) string {
	bad := Check(Run(s, nil), s.Tolerance())
	if len(bad) == 0 {
		return ""
	}
	return kindOf(bad[0])
}
