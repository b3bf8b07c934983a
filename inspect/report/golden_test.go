package report_test

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

	"github.com/redlockctl/redlockctl/inspect/inspecttest"
	"github.com/redlockctl/redlockctl/inspect/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./inspect/report -run Golden -update)", err)
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
	if err := report.WriteTable(&b, inspecttest.FixedSnapshot()); err != nil {
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
	if err := report.WriteDoctor(&b, inspecttest.FixedSnapshot()); err != nil {
		t.Fatal(err)
	}
	golden(t, "doctor.table.golden", b.Bytes())
}

func TestGoldenJSON(t *testing.T) {
	var b bytes.Buffer
	s := inspecttest.FixedSnapshot()
	if err := report.WriteJSON(&b, s); err != nil {
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
