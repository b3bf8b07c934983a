package poll_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect/poll"
	"github.com/redlockctl/redlockctl/inspect/report"
	"github.com/redlockctl/redlockctl/internal/config"
	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// 10k keys with binary and multi-kilobyte values: escaped and cut in the table, in
// full in JSON.
func TestManyBinaryValues(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{})
	const n = 10000
	values := make(map[string]string, n)
	for i := range n {
		size := 24
		if i%50 == 0 {
			size = 4096 + i%3000
		}
		b := make([]byte, size)
		rand.Read(b)
		b[0] = 0xff // never valid UTF-8
		values[fmt.Sprintf("bin:%05d", i)] = string(b)
	}
	for _, m := range ms {
		c := m.Pool.Get()
		for k, v := range values {
			c.Send("SET", k, v, "PX", 120000)
		}
		if _, err := c.Do(""); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	cfg := poll.TestConfig(t, ms, func(c *config.Config) { c.Inspect.Timeout = 20 * time.Second })
	s := poll.NewTestPoller(t, cfg).Poll(context.Background())
	if len(s.Resources) != n || s.Summary.Held != n || !s.Complete {
		t.Fatalf("%d rows, %d held, complete %v", len(s.Resources), s.Summary.Held, s.Complete)
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources []struct {
			Resource string `json:"resource"`
			ValueB64 string `json:"value_b64"`
			Nodes    []struct {
				ValueB64 string `json:"value_b64"`
			} `json:"nodes"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Resources {
		want := values[r.Resource]
		for _, b64 := range []string{r.ValueB64, r.Nodes[0].ValueB64, r.Nodes[2].ValueB64} {
			got, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || string(got) != want {
				t.Fatalf("%s: JSON value of %d bytes, want %d (%v)", r.Resource, len(got), len(want), err)
			}
		}
	}
	var tb bytes.Buffer
	if err := report.WriteTable(&tb, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	if len(lines) < n {
		t.Fatalf("table has %d lines for %d rows", len(lines), n)
	}
	for _, l := range lines {
		if len(l) > 200 || strings.ContainsAny(l, "\x00\r") {
			t.Fatalf("table line not escaped or not cut (%d bytes): %q", len(l), l[:min(len(l), 80)])
		}
	}
	if !strings.Contains(tb.String(), `"\xff`) {
		t.Errorf("binary values not shown escaped")
	}
}

// AUTH: the right password reads the master; none or a wrong one makes it down with
// the server's reason (and never shows the password).
func TestPasswordMasters(t *testing.T) {
	t.Parallel()
	ms := redistest.StartN(t, 3, redistest.Options{Password: "s3cret-pw"})
	poll.Do(t, ms, "SET", "job", "w#"+poll.Hex32, "PX", 60000)
	c := poll.TestConfig(t, ms, func(c *config.Config) {
		c.Masters[0].Password = "s3cret-pw"
		c.Masters[2].Password = "wrong-pw"
	})
	s := poll.NewTestPoller(t, c).Poll(context.Background())
	if !s.Masters[0].Up || poll.Row(t, s, "job").Holders != 1 {
		t.Errorf("m1 with its password: %+v", s.Masters[0])
	}
	if s.Masters[1].Up || !strings.Contains(s.Masters[1].Error, "NOAUTH") {
		t.Errorf("m2 without a password: %+v", s.Masters[1])
	}
	if s.Masters[2].Up || !strings.Contains(s.Masters[2].Error, "WRONGPASS") {
		t.Errorf("m3 with a wrong password: %+v", s.Masters[2])
	}
	var b bytes.Buffer
	report.WriteJSON(&b, s)
	report.WriteTable(&b, s)
	if strings.Contains(b.String(), "s3cret") || strings.Contains(b.String(), "wrong-pw") {
		t.Errorf("a password is in the output")
	}
}
