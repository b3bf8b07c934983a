package inspect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../testdata")

// fixedSnapshot builds a snapshot from fixed raw reads at fixed times, through the
// same merge, judge and findings code as a live poll.
func fixedSnapshot(t *testing.T) *Snapshot {
	t.Helper()
	cfg := Default()
	cfg.Lock.KeyPrefix = "lock:"
	cfg.Inspect.Resources = []string{"reports:weekly"}
	cfg.Inspect.MaxTTL = time.Minute
	for _, n := range []string{"m1", "m2", "m3", "m4", "m5"} {
		cfg.Masters = append(cfg.Masters, MasterConfig{Name: n, Addr: "10.0.0." + n[1:] + ":6379"})
	}
	now := time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
	held := "billing-7f9c:4242#" + hex32 + "#118"
	other := "billing-2b1a:77#" + strings.Repeat("f", 32)
	binary := "\x00\xff\xfe bin\x01"
	long := strings.Repeat("x", 3000)
	read := func(i int) *masterRead {
		sent := now.Add(-5 * time.Millisecond)
		return &masterRead{
			clock:  &ClockSample{Sent: sent, Received: sent.Add(400 * time.Microsecond), Server: sent.Add(200*time.Microsecond + time.Duration(i)*1500*time.Microsecond)},
			health: &health{role: "master", uptimeS: 86400, runID: "run" + string(rune('a'+i)), replID: "repl" + string(rune('a'+i)), appendOnly: "yes", fsync: "always", maxmemory: 0, policy: "noeviction"},
		}
	}
	col := newCollector(cfg)
	batch := func(mi int, kvs ...any) { // key, value, pttl triples; a value "hash" is a hash
		kb := &keyBatch{}
		for i := 0; i < len(kvs); i += 3 {
			kb.keys = append(kb.keys, []byte("lock:"+kvs[i].(string)))
			v := kvs[i+1].(string)
			typ := ""
			if v == "hash" {
				typ, v = "hash", ""
			}
			kb.vals = append(kb.vals, []byte(v))
			kb.types = append(kb.types, typ)
			kb.pttls = append(kb.pttls, int64(kvs[i+2].(int)))
		}
		col.add(mi, now.Add(-3*time.Millisecond), kb)
	}
	batch(0, "billing:nightly", held, 12400, "deploy:api", other, 8000, "search:reindex", "opaque-uuid-550e8400", -1, "blob", binary, 9000, "billing:nightly:fence", "118", -1)
	batch(1, "billing:nightly", held, 12390, "deploy:api", other, 7990, "blob", binary, 9000, "big", long, 20000)
	batch(2, "billing:nightly", held, 12380, "deploy:api", held, 7000, "blob", binary, 9000, "queue", "hash", -1)
	batch(3, "billing:nightly", held, 12410, "deploy:api", held, 7000)
	batch(4, "stale", held, 5000) // m5 fails after sending this: it must not show
	reads := []*masterRead{read(0), read(1), read(2), read(3), {err: errDown}}
	p := NewPoller(cfg, nil)
	return p.build(now, reads, col)
}

var errDown = errorString("connect: dial tcp 10.0.0.5:6379: connection refused")

type errorString string

func (e errorString) Error() string { return string(e) }

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./inspect -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		from := max(0, i-80)
		t.Errorf("%s differs from the golden file at byte %d (rerun with -update after checking):\n--- got\n...%s\n--- want\n...%s",
			name, i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
	}
}

func TestGoldenTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, fixedSnapshot(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "dump.table.golden", b.Bytes())
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) > 200 {
			t.Errorf("table line of %d bytes: values must be truncated", len(line))
		}
		for _, c := range line {
			if c < 0x20 && c != '\t' {
				t.Errorf("raw control byte %q in table line %q", c, line)
			}
		}
	}
}

func TestGoldenDoctor(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDoctor(&b, fixedSnapshot(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "doctor.table.golden", b.Bytes())
}

func TestGoldenJSON(t *testing.T) {
	var b bytes.Buffer
	s := fixedSnapshot(t)
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "dump.json.golden", b.Bytes())
	if bytes.Count(b.Bytes(), []byte("\n")) != 1 {
		t.Errorf("JSON is not one object on one line")
	}
	// The contract's fields, and binary and long values carried in full.
	var doc struct {
		TakenAt   time.Time `json:"taken_at"`
		Quorum    int       `json:"quorum"`
		Complete  *bool     `json:"complete"`
		Masters   []map[string]any
		Resources []struct {
			Resource string `json:"resource"`
			Value    string `json:"value"`
			ValueB64 string `json:"value_b64"`
			Nodes    []struct {
				Master   string `json:"master"`
				Value    string `json:"value"`
				ValueB64 string `json:"value_b64"`
				PTTLMs   *int64 `json:"pttl_ms"`
			} `json:"nodes"`
		} `json:"resources"`
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "addr", "up", "error", "rtt_ms", "clock_offset_ms", "clock_uncertainty_ms", "clock_rate_ppm", "clock_jump", "uptime_s", "role", "appendonly", "appendfsync", "maxmemory_policy", "findings"} {
		if _, ok := doc.Masters[0][k]; !ok {
			t.Errorf("master field %q missing", k)
		}
	}
	for _, k := range []string{"resources", "held", "partial", "split", "no_ttl", "foreign", "free", "masters_up", "findings"} {
		if _, ok := doc.Summary[k]; !ok {
			t.Errorf("summary field %q missing", k)
		}
	}
	if !doc.TakenAt.Equal(s.TakenAt) || doc.Quorum != 3 || doc.Complete == nil {
		t.Errorf("header: %v %d %v", doc.TakenAt, doc.Quorum, doc.Complete)
	}
	found := 0
	for _, r := range doc.Resources {
		switch r.Resource {
		case "blob":
			raw, err := base64.StdEncoding.DecodeString(r.ValueB64)
			if err != nil || string(raw) != "\x00\xff\xfe bin\x01" {
				t.Errorf("binary value lost: %q (%v)", raw, err)
			}
			nb, _ := base64.StdEncoding.DecodeString(r.Nodes[0].ValueB64)
			if string(nb) != "\x00\xff\xfe bin\x01" {
				t.Errorf("binary node value lost: %q", nb)
			}
			found++
		case "big":
			if r.Value != strings.Repeat("x", 3000) || r.ValueB64 != "" {
				t.Errorf("long value not in full: %d bytes", len(r.Value))
			}
			found++
		}
	}
	if found != 2 {
		t.Errorf("blob and big rows: found %d", found)
	}
}

func TestDisplay(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string
	}{
		{"plain", 10, "plain"},
		{"\x00\xffa\n", 20, `\x00\xffa\n`},
		{"0123456789abc", 10, "0123456..."},
		{"héllo wörld", 8, "héllo..."},
		{strings.Repeat("\x01", 1000), 12, `\x01\x01\...`},
	}
	for _, tt := range tests {
		if got := Display(tt.in, tt.width); got != tt.want {
			t.Errorf("Display(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}
