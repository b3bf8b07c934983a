package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The benchmarks' binaries are started by a spawner: this test binary, re-executed
// when a benchmark starts, while the benchmark process is still small. Measured from
// the benchmark process itself, a binary's peak RSS (ru_maxrss from wait4) would be
// at least the benchmark's own: Go starts children with vfork, and exec records the
// peak of the memory the child shared until then, the parent's, which holds the
// in-process poll's snapshot (a million rows in the large benchmark).

// spawnerEnv makes the test binary a spawner (see TestMain).
const spawnerEnv = "REDLOCKCTL_BENCH_SPAWNER"

// spawnReq asks the spawner to run one binary to completion, or, with StopAfter, to
// interrupt it (SIGINT) after that long, sampling its RSS every Sample meanwhile.
type spawnReq struct {
	Path      string
	Args      []string
	StopAfter time.Duration
	Sample    time.Duration
}

// spawnResp is what the spawner measured of one run.
type spawnResp struct {
	Wall    time.Duration
	RSS     int64 // peak, bytes
	Out     int64 // bytes written to stdout
	Lines   int
	Last    string          // the last line of stdout (its last 16 KiB)
	LineAt  []time.Duration // when each line ended, since the start (with StopAfter)
	Samples []rssSample
	Code    int
	Stderr  string
	Err     string // the binary could not be started
}

type rssSample struct {
	T   time.Duration
	RSS int64
}

// serveSpawns runs each request read from r and writes its response to w, until r
// ends.
func serveSpawns(r io.Reader, w io.Writer) {
	dec, enc := json.NewDecoder(r), json.NewEncoder(w)
	for {
		var req spawnReq
		if err := dec.Decode(&req); err != nil {
			return
		}
		enc.Encode(spawn(req))
	}
}

func spawn(req spawnReq) spawnResp {
	cmd := exec.Command(req.Path, req.Args...)
	var mu sync.Mutex
	var lineAt []time.Duration
	var start time.Time
	lc := &lineCounter{}
	if req.StopAfter > 0 {
		lc.onLine = func(t time.Time) { mu.Lock(); lineAt = append(lineAt, t.Sub(start)); mu.Unlock() }
	}
	cmd.Stdout = lc
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start = time.Now()
	if err := cmd.Start(); err != nil {
		return spawnResp{Err: err.Error()}
	}
	var samples []rssSample
	if req.StopAfter > 0 {
		for time.Since(start) < req.StopAfter {
			time.Sleep(req.Sample)
			if rss := procRSS(cmd.Process.Pid); rss > 0 {
				samples = append(samples, rssSample{time.Since(start), rss})
			}
		}
		cmd.Process.Signal(os.Interrupt)
	}
	cmd.Wait()
	wall := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	return spawnResp{
		Wall: wall, RSS: cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024,
		Out: lc.n, Lines: int(lc.lines), Last: string(lc.tail), LineAt: lineAt, Samples: samples,
		Code: cmd.ProcessState.ExitCode(), Stderr: stderr.String(),
	}
}

// spawner is the benchmark's end of a spawner process.
type spawner struct {
	mu  sync.Mutex
	enc *json.Encoder
	dec *json.Decoder
}

// startSpawner starts a spawner; call it before the benchmark grows.
func startSpawner(b *testing.B) *spawner {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), spawnerEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	return &spawner{enc: json.NewEncoder(in), dec: json.NewDecoder(out)}
}

func (s *spawner) run(b *testing.B, req spawnReq) spawnResp {
	s.mu.Lock()
	defer s.mu.Unlock()
	var resp spawnResp
	if err := s.enc.Encode(req); err != nil {
		b.Fatalf("spawner: %v", err)
	}
	if err := s.dec.Decode(&resp); err != nil {
		b.Fatalf("spawner: %v", err)
	}
	if resp.Err != "" {
		b.Fatalf("%s: %s", req.Path, resp.Err)
	}
	return resp
}
