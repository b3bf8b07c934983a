//go:build race

package sim

// defaultSeeds is how many schedules `go test -race` runs: the race detector slows the
// simulator about tenfold, and the race run has it beside every other package.
// `make test` then runs the full count alone, without it.
const defaultSeeds = 500
