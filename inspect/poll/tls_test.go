package poll

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// TLS masters that require client certificates, configured from a file as an operator
// would: the poller reads them (keys included, over its own connection), the redlock
// client acquires through the same pools, and a wrong TLS setup is a master down with
// the reason.
func TestTLSMasters(t *testing.T) {
	t.Setenv("REDLOCKCTL_TLS_PW", "tls-secret")
	servers := redistest.StartN(t, 3, redistest.Options{TLS: true, Password: "tls-secret"})
	master := func(i int, s *redistest.Server, extra string) string {
		return fmt.Sprintf("[[masters]]\nname = \"m%d\"\naddr = %q\npassword_env = \"REDLOCKCTL_TLS_PW\"\n%s", i+1, s.Addr, extra)
	}
	var good, noCA, plain strings.Builder
	for i, s := range servers {
		f := s.TLS
		good.WriteString(master(i, s, fmt.Sprintf("tls = true\ntls_ca = %q\ntls_cert = %q\ntls_key = %q\n", f.CA, f.ClientCert, f.ClientKey)))
		noCA.WriteString(master(i, s, fmt.Sprintf("tls = true\ntls_cert = %q\ntls_key = %q\n", f.ClientCert, f.ClientKey)))
		plain.WriteString(master(i, s, ""))
	}
	load := func(body string) *config.Config {
		t.Helper()
		cfg, _, err := config.Load(writeConfig(t, "[inspect]\ntimeout = \"1s\"\n"+body))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	cfg := load(good.String())
	pools, err := cfg.Pools()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range pools {
			p.Close()
		}
	})
	cfg.Lock.RestartGuard = 0 // the test servers have just started
	client, err := redlock.New(pools, cfg.LockOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lock, err := client.Acquire(context.Background(), "tls:job", 10*time.Second)
	if err != nil {
		t.Fatalf("acquire over TLS: %v", err)
	}
	p := NewPoller(cfg, pools)
	defer p.Close()
	snap := p.Poll(context.Background())
	for _, m := range snap.Masters {
		if !m.Up {
			t.Fatalf("%s down over TLS: %s", m.Name, m.Error)
		}
	}
	r := row(t, snap, "tls:job")
	if r.State != inspect.StateHeld || r.Value != lock.Value() || r.Holders < 2 {
		t.Fatalf("tls:job over TLS: state %s value %q holders %d; want held %q", r.State, r.Value, r.Holders, lock.Value())
	}

	for name, body := range map[string]string{"no CA": noCA.String(), "no TLS": plain.String()} {
		cfg := load(body)
		pools, err := cfg.Pools()
		if err != nil {
			t.Fatal(err)
		}
		p := NewPoller(cfg, pools)
		snap := p.Poll(context.Background())
		p.Close()
		for _, pl := range pools {
			pl.Close()
		}
		for _, m := range snap.Masters {
			if m.Up || m.Error == "" {
				t.Errorf("%s: %s up (error %q) with a wrong TLS setup", name, m.Name, m.Error)
			}
			if strings.Contains(m.Error, "tls-secret") {
				t.Errorf("%s: error leaks the password: %s", name, m.Error)
			}
		}
		t.Logf("%s: %s", name, snap.Masters[0].Error)
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
