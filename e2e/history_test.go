package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// histHold is one hold as the workload's own log has it: held at least from
// acquired (Acquire returned) to released (Release was called).
type histHold struct {
	resource, value    string
	acquired, released time.Time
}

// histWorkload takes and releases locks hist:wN-M from three workers, each on its
// own two resources, for d; it returns its log.
func histWorkload(t *testing.T, c *redlock.Client, d time.Duration) []histHold {
	var mu sync.Mutex
	var log []histHold
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for time.Now().Before(end) {
				res := fmt.Sprintf("w%d-%d", w, rng.IntN(2))
				l, err := c.Acquire(context.Background(), res, 5*time.Second)
				if err != nil {
					continue
				}
				h := histHold{resource: res, value: l.Value(), acquired: time.Now()}
				time.Sleep(time.Duration(150+rng.IntN(200)) * time.Millisecond)
				h.released = time.Now()
				if c.Release(context.Background(), l) == nil {
					mu.Lock()
					log = append(log, h)
					mu.Unlock()
				}
				time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return log
}

// serve records the workload's lifecycles; /api/v1/history sits behind the web
// config's basic auth like /metrics; `history --server` names the holder at the
// midpoint of each logged hold. serve SIGKILLed mid-workload restarts on its store,
// and what it answered before still holds.
func TestHistoryThroughServe(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("hist-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	web := filepath.Join(dir, "web.yml")
	os.WriteFile(web, []byte(fmt.Sprintf("basic_auth_users:\n  ops: %s\n", hash)), 0o600)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[lock]\nkey_prefix = \"hist:\"\n\n[inspect]\npoll_interval = \"500ms\"\n\n[history]\ndir = %q\n\n", filepath.Join(dir, "history"))
	for _, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\naddr = %q\n\n", a)
	}
	cfgPath := writeConfig(t, cfg.String())
	addr := freeAddr(t)
	bin := buildBinary(t)
	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if auth {
			req.SetBasicAuth("ops", "hist-pw")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	startServe := func() (*exec.Cmd, *logged) {
		cmd := exec.Command(bin, "serve", "--config", cfgPath, "--listen", addr, "--web.config.file", web)
		out := startLogged(t, cmd)
		out.waitFor(t, regexp.MustCompile(`(recording) every lock lifecycle`))
		eventually(t, 30*time.Second, "the feed up on every master", func() string {
			code, body := get("/metrics", true)
			if code == http.StatusOK && strings.Count(body, "redlockctl_live_feed_up{master=") == 3 && !regexp.MustCompile(`redlockctl_live_feed_up\{[^}]*\} 0`).MatchString(body) {
				return ""
			}
			return fmt.Sprintf("GET /metrics: %d", code)
		})
		return cmd, out
	}

	pools := redistest.Pools(servers)
	client, err := redlock.New(pools, redlock.WithKeyPrefix("hist:"), redlock.WithRetries(0), redlock.WithRestartGuard(0), redlock.WithOwner("e2e"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	serve, _ := startServe()
	before := histWorkload(t, client, 2*time.Second)
	// Mid-workload: serve is killed, and started again on its store.
	var during []histHold
	done := make(chan struct{})
	go func() { defer close(done); during = histWorkload(t, client, 3*time.Second) }()
	time.Sleep(1500 * time.Millisecond)
	serve.Process.Signal(syscall.SIGKILL)
	serve.Wait()
	killed := time.Now()
	serve, out := startServe()
	<-done
	after := histWorkload(t, client, 2*time.Second)
	time.Sleep(3500 * time.Millisecond) // the feed's last ends, a flush, and the second a session covers behind it

	if code, _ := get("/api/v1/history?at="+time.Now().UTC().Format(time.RFC3339), false); code != http.StatusUnauthorized {
		t.Errorf("/api/v1/history without credentials: %d, want 401", code)
	}
	server := "http://ops:hist-pw@" + addr
	ask := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, append([]string{"history", "--server", server}, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	at := func(h histHold) (int, string) {
		mid := h.acquired.Add(h.released.Sub(h.acquired) / 2)
		code, stdout, stderr := ask(h.resource, "--at", mid.UTC().Format(time.RFC3339Nano), "-o", "json")
		if strings.Contains(stderr, "ops") && strings.Contains(stderr, "hist-pw") {
			t.Errorf("the password is printed: %s", stderr)
		}
		var resp struct {
			Answer struct {
				Holders []struct{ Value string }
				Unknown string
			}
		}
		if err := json.Unmarshal([]byte(stdout), &resp); err != nil {
			t.Fatalf("history --at: exit %d, %v\n%s%s", code, err, stdout, stderr)
		}
		if strings.Contains(resp.Answer.Unknown, "for a core") {
			return code, "late" // a span the feed said it handled late (a loaded machine)
		}
		if resp.Answer.Unknown != "" {
			return code, "unknown"
		}
		if len(resp.Answer.Holders) != 1 {
			return code, strconv.Itoa(len(resp.Answer.Holders)) + " holders"
		}
		return code, resp.Answer.Holders[0].Value
	}
	// A kill costs what came after the last write, and the second a session
	// covers behind it: holds in the last 2.5 s before the kill may be unknown.
	covered := killed.Add(-2500 * time.Millisecond)
	var sure, unsure []histHold
	for _, h := range before {
		if h.released.Before(covered) {
			sure = append(sure, h)
		} else {
			unsure = append(unsure, h)
		}
	}
	sure = append(sure, after...)
	unsure = append(unsure, during...)
	late := 0
	for _, h := range sure {
		code, got := at(h)
		if got == "late" {
			late++
			continue
		}
		if code != 0 || got != h.value {
			t.Errorf("%s at the midpoint of %s's hold: exit %d, %s\n%s", h.resource, h.value, code, got, out.text())
		}
	}
	if late*4 > len(sure) {
		t.Errorf("%d of %d holds fell in spans the feed handled late: too many to judge", late, len(sure))
	}
	// Across the kill: the right value, or unknown; never another.
	unknown := 0
	for _, h := range unsure {
		switch code, got := at(h); {
		case (got == "unknown" || got == "late") && code == 3:
			unknown++
		case got != h.value:
			_, list, _ := ask(h.resource, "--since", h.acquired.Add(-2*time.Second).UTC().Format(time.RFC3339Nano), "--until", h.released.Add(2*time.Second).UTC().Format(time.RFC3339Nano))
			t.Errorf("%s at the midpoint of %s's hold (%s..%s), across the kill (%s): exit %d, %s\n%s", h.resource, h.value,
				h.acquired.UTC().Format("15:04:05.000"), h.released.UTC().Format("15:04:05.000"), killed.UTC().Format("15:04:05.000"), code, got, list)
		}
	}
	code, stdout, _ := ask("--at", killed.UTC().Format(time.RFC3339Nano))
	if code != 3 || !strings.Contains(stdout, "the recorder was not running") {
		t.Errorf("at the kill: exit %d\n%s", code, stdout)
	}
	if len(sure) < 20 {
		t.Fatalf("the workload logged %d holds away from the kill: too few to judge", len(sure))
	}
	t.Logf("%d holds away from the kill, all answered; %d near or across it, %d of them unknown", len(sure), len(unsure), unknown)
	serve.Process.Signal(syscall.SIGTERM)
	serve.Wait()
}
