// Package wire is the bottom of the inspect layers: the bytes between the poller and
// a master. It writes RESP commands and reads replies (Conn) on a TCP or TLS
// connection, moves the bytes of a plain TCP socket with raw system calls on Linux,
// faults in the memory it is about to fill, and paces the garbage collector while a
// poll runs (Lean).
//
// It knows nothing of locks, rows or verdicts and imports no other inspect package.
// It sends only what its caller writes: the commands themselves, all read-only, are
// chosen by inspect/poll.
package wire
