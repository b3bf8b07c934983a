package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/internal/config"
)

func TestMasterFindings(t *testing.T) {
	cfg := config.Default()
	cfg.Masters = []config.MasterConfig{{Name: "m1", Addr: "127.0.0.1:7001"}}
	cfg.Inspect.MaxTTL = time.Minute
	okHealth := func() *Health {
		return &Health{Role: "master", UptimeS: 3600, AppendOnly: "yes", Fsync: "always", Maxmemory: 0, Policy: "noeviction", RunID: "r1"}
	}
	rate := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		m       inspect.Master
		h       func(*Health)
		timeErr string
		maxTTL  time.Duration
		fence   bool
		want    string // codes, space separated, in order
	}{
		{"healthy", inspect.Master{Up: true}, nil, "", 0, false, ""},
		{"down", inspect.Master{Up: false, Error: "connect: refused"}, nil, "", 0, false, "down"},
		{"replica", inspect.Master{Up: true}, func(h *Health) { h.Role = "slave" }, "", 0, false, "not-master"},
		{"restarted, no fsync always", inspect.Master{Up: true, UptimeS: 10}, func(h *Health) { h.Fsync = "everysec" }, "", 0, false, "restarted-recently"},
		{"restarted with fsync always", inspect.Master{Up: true, UptimeS: 10}, nil, "", 0, false, ""},
		{"uptime past max_ttl but under a longer lock", inspect.Master{Up: true, UptimeS: 120}, func(h *Health) { h.AppendOnly = "no" }, "", 5 * time.Minute, false, "restarted-recently"},
		{"volatile-lru with maxmemory", inspect.Master{Up: true}, func(h *Health) { h.Maxmemory, h.Policy = 10<<20, "volatile-lru" }, "", 0, false, "evicting-policy"},
		{"allkeys-lru with maxmemory", inspect.Master{Up: true}, func(h *Health) { h.Maxmemory, h.Policy = 10<<20, "allkeys-lru" }, "", 0, false, "evicting-policy"},
		{"volatile-lru without maxmemory", inspect.Master{Up: true}, func(h *Health) { h.Policy = "volatile-lru" }, "", 0, false, ""},
		{"fencing without durability", inspect.Master{Up: true, UptimeS: 3600}, func(h *Health) { h.Fsync = "everysec" }, "", 0, true, "fence-not-durable"},
		{"clock jump", inspect.Master{Up: true, ClockJump: true}, nil, "", 0, false, "clock-jump"},
		{"clock offset", inspect.Master{Up: true, ClockOffsetMs: 5000}, nil, "", 0, false, "clock-offset"},
		{"clock rate beyond drift", inspect.Master{Up: true, ClockRatePPM: rate(20000)}, nil, "", 0, false, "clock-rate"},
		{"clock rate noticeable", inspect.Master{Up: true, ClockRatePPM: rate(-800)}, nil, "", 0, false, "clock-rate"},
		{"rtt near node timeout", inspect.Master{Up: true, RTTMs: 40}, nil, "", 0, false, "rtt-high"},
		{"TIME refused", inspect.Master{Up: true}, nil, "NOPERM", 0, false, "no-time"},
		{"INFO refused", inspect.Master{Up: true}, func(h *Health) { *h = Health{InfoErr: "NOPERM", Maxmemory: -1} }, "", 0, false, "no-info"},
		{"scan capped", inspect.Master{Up: true, Capped: true}, nil, "", 0, false, "scan-capped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := okHealth()
			if tt.h != nil {
				tt.h(h)
			}
			c := *cfg
			c.Lock.Fencing = tt.fence
			tt.m.Name = "m1"
			fs := MasterFindings(&c, &tt.m, h, tt.timeErr, tt.maxTTL)
			var codes []string
			for _, f := range fs {
				codes = append(codes, f.Code)
				if f.Fix == "" || f.Message == "" || (f.Severity != inspect.SeverityWarn && f.Severity != inspect.SeverityCrit) || f.Master != "m1" {
					t.Errorf("incomplete finding %+v", f)
				}
			}
			if got := strings.Join(codes, " "); got != tt.want {
				t.Errorf("findings %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSnapshotFindings(t *testing.T) {
	cfg := config.Default()
	cfg.Masters = []config.MasterConfig{{Name: "m1", Addr: "127.0.0.1:7001"}, {Name: "m2", Addr: "127.0.0.1:7002"}, {Name: "m3", Addr: "127.0.0.1:7003"}}
	masters := []inspect.Master{{Name: "m1", Up: true}, {Name: "m2", Up: true}, {Name: "m3", Up: true}}
	h := func(run, role, mhost, mport, repl string) *Health {
		return &Health{RunID: run, Role: role, MasterHost: mhost, MasterPort: mport, ReplID: repl}
	}
	tests := []struct {
		name    string
		masters []inspect.Master
		hs      []*Health
		want    string
	}{
		{"independent", masters, []*Health{h("a", "master", "", "", "x"), h("b", "master", "", "", "y"), h("c", "master", "", "", "z")}, ""},
		{"same server twice", masters, []*Health{h("a", "master", "", "", "x"), h("a", "master", "", "", "x"), h("c", "master", "", "", "z")}, "duplicate-server"},
		{"m3 replicates m1 by address", masters, []*Health{h("a", "master", "", "", "x"), h("b", "master", "", "", "y"), h("c", "slave", "localhost", "7001", "q")}, "replicates"},
		{"m2 replicates m1 by replication id", masters, []*Health{h("a", "master", "", "", "x"), h("b", "slave", "10.0.0.9", "6379", "x"), h("c", "master", "", "", "z")}, "replicates"},
		{"even", masters[:2], []*Health{h("a", "master", "", "", "x"), h("b", "master", "", "", "y")}, "even-masters"},
		{"no quorum", []inspect.Master{{Name: "m1", Up: true}, {Name: "m2"}, {Name: "m3"}}, []*Health{nil, nil, nil}, "no-quorum"},
	}
	for _, tt := range tests {
		fs := SnapshotFindings(cfg, tt.masters, tt.hs)
		var codes []string
		for _, f := range fs {
			codes = append(codes, f.Code)
		}
		if got := strings.Join(codes, " "); got != tt.want {
			t.Errorf("%s: findings %q, want %q", tt.name, got, tt.want)
		}
	}

	// A password written in the file is a finding that names the master, never the secret.
	literal := *cfg
	literal.Path = "prod.toml"
	literal.Masters = append([]config.MasterConfig(nil), cfg.Masters...)
	literal.Masters[1].Password, literal.Masters[1].PasswordLiteral = "hunter2", true
	fs := SnapshotFindings(&literal, masters, []*Health{nil, nil, nil})
	if len(fs) != 1 || fs[0].Code != "literal-password" || fs[0].Master != "m2" || fs[0].Fix == "" {
		t.Fatalf("literal password: findings %+v", fs)
	}
	if strings.Contains(fs[0].Message+fs[0].Fix, "hunter2") {
		t.Fatalf("finding leaks the password: %+v", fs[0])
	}
}

// Every check's code is listed in Codes once, so the alert-rule test can rely on it.
func TestFindingCodesListed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range inspect.Codes {
		if seen[c.Code] || c.Meaning == "" || c.Scope == "" {
			t.Errorf("Codes: %q listed twice or without scope and meaning", c.Code)
		}
		seen[c.Code] = true
	}
	for _, ch := range masterChecks {
		if !inspect.KnownCode(ch.code) {
			t.Errorf("check %q is not in Codes", ch.code)
		}
	}
	if inspect.KnownCode("no-such-code") {
		t.Error("KnownCode accepts an unknown code")
	}
}

// The restarted-recently finding says how much longer acquisitions leave the master
// out of their quorums (the restart guard), and says nothing of it with the guard off.
func TestRestartedRecentlySaysTheGuard(t *testing.T) {
	cfg := config.Default()
	cfg.Inspect.MaxTTL = time.Minute
	m := inspect.Master{Name: "m3", Up: true, UptimeS: 10}
	h := &Health{Role: "master", AppendOnly: "no", Fsync: "everysec"}
	fs := MasterFindings(cfg, &m, h, "", 0)
	if len(fs) != 1 || !strings.Contains(fs[0].Fix, "leave it out of quorums for another 50.0s (lock.restart_guard)") {
		t.Errorf("guard on: %+v", fs)
	}
	cfg.Lock.RestartGuard = 0
	if fs := MasterFindings(cfg, &m, h, "", 0); len(fs) != 1 || strings.Contains(fs[0].Fix, "restart_guard") {
		t.Errorf("guard off: %+v", fs)
	}
}
