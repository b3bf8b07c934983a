package debugvars

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestStartServesVarsOnLoopbackOnly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	runtime.GC() // a live heap to report
	if err := Start(addr); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v Vars
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.PID != os.Getpid() || v.Goroutines < 2 || v.HeapAlloc == 0 || v.HeapLive == 0 {
		t.Errorf("vars %+v: want this pid, the server's goroutines and a heap", v)
	}
	for _, bad := range []string{"0.0.0.0:0", "10.1.2.3:80", "nohost"} {
		if err := Start(bad); err == nil || !strings.Contains(err.Error(), Env) {
			t.Errorf("Start(%q) = %v, want an error naming $%s", bad, err, Env)
		}
	}
}
