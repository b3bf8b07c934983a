package redlock

import (
	"context"
	"errors"
	"testing"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

func TestRunScript(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	c := newClient(t, redistest.Pools(servers), WithKeyPrefix("lock:"))
	s := NewScript(`local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
if v then return -1 end
return 0`)
	servers[0].Do("SET", "raw", "a")
	servers[1].Do("SET", "raw", "b")
	res, err := c.RunScript(context.Background(), s, []string{"raw"}, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{OK, Taken, Absent}
	for i, n := range res.Nodes {
		if n.Outcome != want[i] {
			t.Errorf("master %d: %v (%v), want %v (the key is raw: no prefix applied)", i, n.Outcome, n.Err, want[i])
		}
	}
	if v := servers[1].Get(t, "raw"); v != "b" {
		t.Errorf("other value deleted: %q", v)
	}

	odd := NewScript(`return 'what'`)
	res, err = c.RunScript(context.Background(), odd, []string{"raw"})
	if !errors.Is(err, ErrNoQuorum) || res.Count(Failed) != 3 {
		t.Errorf("a reply outside the convention: %+v %v, want Failed everywhere", res, err)
	}
	for _, keys := range [][]string{nil, {""}, {"lock:x:fence"}} {
		if _, err := c.RunScript(context.Background(), s, keys, "a"); !errors.Is(err, ErrInvalidResource) {
			t.Errorf("keys %q: err %v, want ErrInvalidResource", keys, err)
		}
	}
}
