package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/history/pgtest"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// Two serve replicas of one fleet record to one PostgreSQL database ([history] url,
// the password from password_env): each lifecycle the workload logged is listed
// once by `history` reading the database, its midpoint names its holder, and
// neither serve prints the password.
func TestTwoServeReplicasKeepOneHistory(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	pg := pgtest.Start(t)
	dbURL := pg.NewDatabase()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[lock]\nkey_prefix = \"hist:\"\n\n[inspect]\npoll_interval = \"500ms\"\n\n[history]\nurl = %q\npassword_env = \"REDLOCKCTL_E2E_HISTORY_PW\"\n\n", dbURL)
	for _, a := range redistest.Addrs(servers) {
		fmt.Fprintf(&cfg, "[[masters]]\naddr = %q\n\n", a)
	}
	cfgPath := writeConfig(t, cfg.String())
	env := append(os.Environ(), "REDLOCKCTL_E2E_HISTORY_PW="+pgtest.Password)
	bin := buildBinary(t)
	var serves []*exec.Cmd
	var outs []*logged
	for range 2 {
		addr := freeAddr(t)
		cmd := exec.Command(bin, "serve", "--config", cfgPath, "--listen", addr)
		cmd.Env = env
		out := startLogged(t, cmd)
		out.waitFor(t, regexp.MustCompile(`(recording) every lock lifecycle to postgres://`))
		eventually(t, 30*time.Second, "the feed up on every master", func() string {
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				return err.Error()
			}
			defer resp.Body.Close()
			b := new(strings.Builder)
			buf := make([]byte, 1<<16)
			for {
				n, err := resp.Body.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			body := b.String()
			if strings.Count(body, "redlockctl_live_feed_up{master=") == 3 && !regexp.MustCompile(`redlockctl_live_feed_up\{[^}]*\} 0`).MatchString(body) &&
				strings.Contains(body, "redlockctl_history_recording 1") {
				return ""
			}
			return "not yet"
		})
		serves, outs = append(serves, cmd), append(outs, out)
	}
	client, err := redlock.New(redistest.Pools(servers), redlock.WithKeyPrefix("hist:"), redlock.WithRetries(0), redlock.WithRestartGuard(0), redlock.WithOwner("e2e"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	began := time.Now()
	log := histWorkload(t, client, 3*time.Second)
	time.Sleep(3500 * time.Millisecond) // the feeds' last ends, a flush, and the second a session covers behind it
	for _, s := range serves {
		s.Process.Signal(syscall.SIGTERM)
		s.Wait()
	}
	for _, o := range outs {
		if strings.Contains(o.text(), pgtest.Password) {
			t.Errorf("serve printed the database password:\n%s", o.text())
		}
	}

	history := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"history", "--config", cfgPath}, args...)...)
		cmd.Env = env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if strings.Contains(stderr.String(), pgtest.Password) {
			t.Errorf("history printed the database password: %s", stderr.String())
		}
		return cmd.ProcessState.ExitCode(), stdout.String() + stderr.String()
	}
	_, out := history("--since", began.Add(-time.Second).UTC().Format(time.RFC3339Nano), "-o", "ndjson")
	count := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l struct{ Value, End string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Value != "" {
			count[l.Value]++
		}
	}
	for _, h := range log {
		if count[h.value] != 1 {
			t.Errorf("%s of %s listed %d times, want once", h.value, h.resource, count[h.value])
		}
		mid := h.acquired.Add(h.released.Sub(h.acquired) / 2)
		if code, out := history(h.resource, "--at", mid.UTC().Format(time.RFC3339Nano)); code != 0 || !strings.Contains(out, h.value) || strings.Count(out, "#") != 1 {
			t.Errorf("%s at the midpoint of %s's hold: exit %d\n%s", h.resource, h.value, code, out)
		}
	}
	// Both replicas recorded: two writers' sessions.
	var writers int
	if err := pg.Conn(dbURL).QueryRow(context.Background(), "SELECT count(DISTINCT writer) FROM redlockctl_spans WHERE kind = 'session'").Scan(&writers); err != nil || writers != 2 {
		t.Errorf("%d writers' sessions (%v), want the two serves'", writers, err)
	}
	if len(log) < 10 {
		t.Fatalf("the workload logged %d holds: too few to judge", len(log))
	}
}
