//go:build !race

package sim

// defaultSeeds is how many schedules `go test` runs.
const defaultSeeds = 20000
