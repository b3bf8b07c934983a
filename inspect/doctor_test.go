package inspect

import (
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/internal/config"
)

func TestMasterFindings(t *testing.T) {
	cfg := config.Default()
	cfg.Masters = []config.MasterConfig{{Name: "m1", Addr: "127.0.0.1:7001"}}
	cfg.Inspect.MaxTTL = time.Minute
	okHealth := func() *health {
		return &health{role: "master", uptimeS: 3600, appendOnly: "yes", fsync: "always", maxmemory: 0, policy: "noeviction", runID: "r1"}
	}
	rate := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		m       Master
		h       func(*health)
		timeErr string
		maxTTL  time.Duration
		fence   bool
		want    string // codes, space separated, in order
	}{
		{"healthy", Master{Up: true}, nil, "", 0, false, ""},
		{"down", Master{Up: false, Error: "connect: refused"}, nil, "", 0, false, "down"},
		{"replica", Master{Up: true}, func(h *health) { h.role = "slave" }, "", 0, false, "not-master"},
		{"restarted, no fsync always", Master{Up: true, UptimeS: 10}, func(h *health) { h.fsync = "everysec" }, "", 0, false, "restarted-recently"},
		{"restarted with fsync always", Master{Up: true, UptimeS: 10}, nil, "", 0, false, ""},
		{"uptime past max_ttl but under a longer lock", Master{Up: true, UptimeS: 120}, func(h *health) { h.appendOnly = "no" }, "", 5 * time.Minute, false, "restarted-recently"},
		{"volatile-lru with maxmemory", Master{Up: true}, func(h *health) { h.maxmemory, h.policy = 10<<20, "volatile-lru" }, "", 0, false, "evicting-policy"},
		{"allkeys-lru with maxmemory", Master{Up: true}, func(h *health) { h.maxmemory, h.policy = 10<<20, "allkeys-lru" }, "", 0, false, "evicting-policy"},
		{"volatile-lru without maxmemory", Master{Up: true}, func(h *health) { h.policy = "volatile-lru" }, "", 0, false, ""},
		{"fencing without durability", Master{Up: true, UptimeS: 3600}, func(h *health) { h.fsync = "everysec" }, "", 0, true, "fence-not-durable"},
		{"clock jump", Master{Up: true, ClockJump: true}, nil, "", 0, false, "clock-jump"},
		{"clock offset", Master{Up: true, ClockOffsetMs: 5000}, nil, "", 0, false, "clock-offset"},
		{"clock rate beyond drift", Master{Up: true, ClockRatePPM: rate(20000)}, nil, "", 0, false, "clock-rate"},
		{"clock rate noticeable", Master{Up: true, ClockRatePPM: rate(-800)}, nil, "", 0, false, "clock-rate"},
		{"rtt near node timeout", Master{Up: true, RTTMs: 40}, nil, "", 0, false, "rtt-high"},
		{"TIME refused", Master{Up: true}, nil, "NOPERM", 0, false, "no-time"},
		{"INFO refused", Master{Up: true}, func(h *health) { *h = health{infoErr: "NOPERM", maxmemory: -1} }, "", 0, false, "no-info"},
		{"scan capped", Master{Up: true, Capped: true}, nil, "", 0, false, "scan-capped"},
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
			fs := masterFindings(&c, &tt.m, h, tt.timeErr, tt.maxTTL)
			var codes []string
			for _, f := range fs {
				codes = append(codes, f.Code)
				if f.Fix == "" || f.Message == "" || (f.Severity != SeverityWarn && f.Severity != SeverityCrit) || f.Master != "m1" {
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
	masters := []Master{{Name: "m1", Up: true}, {Name: "m2", Up: true}, {Name: "m3", Up: true}}
	h := func(run, role, mhost, mport, repl string) *health {
		return &health{runID: run, role: role, masterHost: mhost, masterPort: mport, replID: repl}
	}
	tests := []struct {
		name    string
		masters []Master
		hs      []*health
		want    string
	}{
		{"independent", masters, []*health{h("a", "master", "", "", "x"), h("b", "master", "", "", "y"), h("c", "master", "", "", "z")}, ""},
		{"same server twice", masters, []*health{h("a", "master", "", "", "x"), h("a", "master", "", "", "x"), h("c", "master", "", "", "z")}, "duplicate-server"},
		{"m3 replicates m1 by address", masters, []*health{h("a", "master", "", "", "x"), h("b", "master", "", "", "y"), h("c", "slave", "localhost", "7001", "q")}, "replicates"},
		{"m2 replicates m1 by replication id", masters, []*health{h("a", "master", "", "", "x"), h("b", "slave", "10.0.0.9", "6379", "x"), h("c", "master", "", "", "z")}, "replicates"},
		{"even", masters[:2], []*health{h("a", "master", "", "", "x"), h("b", "master", "", "", "y")}, "even-masters"},
		{"no quorum", []Master{{Name: "m1", Up: true}, {Name: "m2"}, {Name: "m3"}}, []*health{nil, nil, nil}, "no-quorum"},
	}
	for _, tt := range tests {
		fs := snapshotFindings(cfg, tt.masters, tt.hs)
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
	fs := snapshotFindings(&literal, masters, []*health{nil, nil, nil})
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
	for _, c := range Codes {
		if seen[c.Code] || c.Meaning == "" || c.Scope == "" {
			t.Errorf("Codes: %q listed twice or without scope and meaning", c.Code)
		}
		seen[c.Code] = true
	}
	for _, ch := range masterChecks {
		if !KnownCode(ch.code) {
			t.Errorf("check %q is not in Codes", ch.code)
		}
	}
	if KnownCode("no-such-code") {
		t.Error("KnownCode accepts an unknown code")
	}
}

// The restarted-recently finding says how much longer acquisitions leave the master
// out of their quorums (the restart guard), and says nothing of it with the guard off.
func TestRestartedRecentlySaysTheGuard(t *testing.T) {
	cfg := config.Default()
	cfg.Inspect.MaxTTL = time.Minute
	m := Master{Name: "m3", Up: true, UptimeS: 10}
	h := &health{role: "master", appendOnly: "no", fsync: "everysec"}
	fs := masterFindings(cfg, &m, h, "", 0)
	if len(fs) != 1 || !strings.Contains(fs[0].Fix, "leave it out of quorums for another 50.0s (lock.restart_guard)") {
		t.Errorf("guard on: %+v", fs)
	}
	cfg.Lock.RestartGuard = 0
	if fs := masterFindings(cfg, &m, h, "", 0); len(fs) != 1 || strings.Contains(fs[0].Fix, "restart_guard") {
		t.Errorf("guard off: %+v", fs)
	}
}
