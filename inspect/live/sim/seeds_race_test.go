//go:build race

package sim

// defaultSeeds is how many schedules `go test -race` runs (the race detector slows the
// simulator about tenfold; `make test` runs the full count without it).
const defaultSeeds = 2000
