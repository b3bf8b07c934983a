// Package carry keeps rows across polls: when a master does not answer, the rows it
// held keep its last reading (Node.LastSeen, with the PTTL projected from when it was
// read) until it answers again or the projection runs out, so that a master down is
// not a lock released.
//
// The rules (which masters are carried from, until when a node is carried, onto which
// row, when a row of its own is kept and how it is counted) are written once, in
// rules.go, over a record of the last poll. Two carriers keep that record in two
// forms: Tracker keeps the last snapshot and carries whole rows (the console, dump
// --watch); Carrier keeps a few bytes a row and carries counts alone (serve,
// whose metrics read only a poll's counts and which keeps no poll between scrapes).
//
// It never reads a server and never writes; it takes what inspect/poll produced.
package carry
