// Package verdict judges what was read: each resource across the masters (held,
// partial, split, no-ttl, foreign, semaphore, bookkeeping, single-instance), the
// library that wrote it (through locks.Identify), each master's clock (offset, rate,
// jumps), the doctor's checks of masters, Sentinel groups and clusters, and the events
// between two polls.
//
// It never reads a server and never writes: it takes readings and facts (Health,
// SentinelInfo, ClusterFacts, clock samples) from inspect/poll or a test and answers in
// the model's types (package inspect). It imports the model and inspect/locks only.
package verdict
