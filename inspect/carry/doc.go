// Package carry keeps rows across polls: when a master does not answer, the rows it
// held keep its last reading (Node.LastSeen, with the PTTL projected from when it was
// read) until it answers again or the projection runs out, so that a master down is
// not a lock released. Tracker carries whole snapshots (the console, serve); Carrier
// carries streamed rows in compact records (dump's streamed path).
//
// It never reads a server and never writes; it takes what inspect/poll produced.
package carry
