// Package exporttest reads what serve exposes, for tests of the packages that run it
// (the CLI's tests, the end-to-end benchmarks), the way net/http/httptest serves
// net/http.
package exporttest

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Scrape GETs a Prometheus text exposition at url and returns each sample as
// name{labels} -> value, exactly as the exposition writes them; a failed GET fails tb.
func Scrape(tb testing.TB, url string) map[string]float64 {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				out[line[:i]] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	return out
}
