// Package poll reads lock state from N Redis masters: one Poller per fleet dials
// plain masters, Sentinel groups and clusters (following failovers and the slot map),
// scans every lock key with TYPE, PTTL and GET (hashes and sorted sets with their
// companions, see keyread.go), collects the reads of all masters into rows, and hands
// them to inspect/verdict to judge: a whole Snapshot (Poll) or rows a chunk at a time
// (PollStream). Replay builds a snapshot from given reads through the same code.
//
// It never writes: every command it sends is read-only and bounded by a deadline
// (inspect/readonly_test.go checks the source). It judges nothing itself, and keeps
// between polls only what the next poll needs (connections, clock samples, the last
// health of each master, the previous readings for events).
package poll
