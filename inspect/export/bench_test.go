package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

const (
	benchMasters = 5
	benchKeys    = 100_000
	benchScrapes = 50
)

// BenchmarkScrape measures a scrape of /metrics over 5 real masters × 100k lock keys,
// beside two baselines from the same run: a GET of /healthz through the same server
// (the HTTP floor) and one full poll of those masters. Scrapes are timed twice: with
// the poller idle, and while it polls back to back in the background (the worst case:
// a scrape racing a 500k-key poll for CPU and memory). It reports the best and worst
// scrape, and the body size as sent to Prometheus (gzip) and uncompressed.
func BenchmarkScrape(b *testing.B) {
	servers := redistest.StartN(b, benchMasters, redistest.Options{})
	var wg sync.WaitGroup
	for _, m := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); plant(b, m.Pool, benchKeys) }()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	cfg := config.Default()
	cfg.Inspect.Timeout = 2 * time.Minute
	cfg.Inspect.MaxKeys = 2 * benchKeys
	cfg.Inspect.PollInterval = 0
	for i, s := range servers {
		cfg.Masters = append(cfg.Masters, config.MasterConfig{Name: fmt.Sprintf("m%d", i+1), Addr: s.Addr})
	}
	for i := range 20 { // configured resources: 19 held, one free
		cfg.Inspect.Resources = append(cfg.Inspect.Resources, "job:"+strconv.Itoa(i*997))
	}
	cfg.Inspect.Resources[19] = "reports:daily"
	p := newPoller(b, cfg)
	o := Options{Resources: cfg.Inspect.Resources}
	for _, m := range cfg.Masters {
		o.Masters = append(o.Masters, m.Name)
	}
	e := New(o)
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	client := srv.Client()

	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s := p.Poll(context.Background())
		pollD := time.Since(start)
		if !s.Complete || len(s.Resources) != benchKeys+1 || s.Summary.Held != benchKeys {
			b.Fatalf("poll: complete %v, %d rows, %d held", s.Complete, len(s.Resources), s.Summary.Held)
		}
		e.Record(s, pollD)
		s = nil

		health := timeGets(b, client, srv.URL+"/healthz", benchScrapes, nil)
		var plain, zipped int
		idle := timeGets(b, client, srv.URL+"/metrics", benchScrapes, func(body []byte, gz int) { plain, zipped = len(body), gz })

		// Scrapes while the poller works back to back.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		before := e.cur.Load().polls
		go func() {
			e.Run(ctx, func(ctx context.Context) Poll { return Poll{Stream: p.PollStream(ctx)} }, 0)
			close(done)
		}()
		var busy []time.Duration
		for e.cur.Load().polls < before+3 {
			busy = append(busy, timeGets(b, client, srv.URL+"/metrics", 1, nil)...)
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done

		b.ReportMetric(ms(pollD), "poll-ms")
		b.ReportMetric(ms(slices.Min(health)), "healthz-ms")
		b.ReportMetric(ms(slices.Min(idle)), "scrape-best-ms")
		b.ReportMetric(ms(slices.Max(idle)), "scrape-worst-ms")
		b.ReportMetric(ms(slices.Max(busy)), "scrape-worst-during-poll-ms")
		b.ReportMetric(float64(zipped), "body-gzip-B")
		b.Logf("5 masters × %d keys, 20 configured resources: poll %v | GET /healthz best %v | scrape idle best %v, worst %v (%d scrapes) | scrape during polls: median %v, worst %v (%d scrapes) | body %d B (%d B gzip) | target ≤ 100 ms",
			benchKeys, pollD.Round(time.Millisecond), slices.Min(health).Round(time.Microsecond),
			slices.Min(idle).Round(time.Microsecond), slices.Max(idle).Round(time.Microsecond), len(idle),
			median(busy).Round(time.Microsecond), slices.Max(busy).Round(time.Microsecond), len(busy), plain, zipped)
	}
}

// timeGets GETs u n times (asking for gzip, as Prometheus does) and returns each
// duration, body read included. seen, if set, gets the last body and its gzip size.
func timeGets(b *testing.B, c *http.Client, u string, n int, seen func(body []byte, gz int)) []time.Duration {
	var ds []time.Duration
	for range n {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		start := time.Now()
		resp, err := c.Transport.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ds = append(ds, time.Since(start))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("GET %s: %v %v", u, resp.Status, err)
		}
		if seen != nil {
			body := raw
			if resp.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					b.Fatal(err)
				}
				body, _ = io.ReadAll(zr)
			}
			seen(body, len(raw))
		}
	}
	return ds
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// plant writes n lock keys "job:"+i (see redistest.PlantLocks); it may run
// in its own goroutine, so it reports failures with Error.
func plant(b *testing.B, pool *redis.Pool, n int) {
	if err := redistest.PlantLocks(pool, "job:", n, 10*time.Minute); err != nil {
		b.Error(err)
	}
}
