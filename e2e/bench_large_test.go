//go:build benchlarge

package e2e

import "testing"

// BenchmarkEndToEndLarge runs `dump -o json` (the built binary) on 5 masters × 1M
// lock keys (and the dump config's own timeout and max_keys), beside a plain parallel SCAN and the in-process
// poll of the same run. Targets: wall ≤ 3.5× SCAN, peak RSS ≤ 1 GiB.
// Run with `make bench-large` (the redis-servers hold about 1 GiB in all).
func BenchmarkEndToEndLarge(b *testing.B) {
	e := newE2ESet(b, 5, 1_000_000)
	for range b.N {
		e.measure(b, []e2eCmd{
			{"dump -o json", "≤3.5× scan, ≤1GiB", []string{"dump", "-o", "json"}, checkJSON},
		}, "(for reference)", rounds(1))
	}
}

// BenchmarkConsoleLarge is BenchmarkConsole at 5 masters × 1M lock keys (the
// default config). Targets: console peak RSS ≤ 1 GiB, serve ≤ 300 MiB; no master ever
// reported down, every snapshot complete.
func BenchmarkConsoleLarge(b *testing.B) {
	e := newE2ESet(b, 5, 1_000_000)
	for range b.N {
		e.measureLive(b, "≤1GiB, no master down, every snapshot complete", "≤300MiB, no master down, every snapshot complete")
	}
}
