// Package debugvars serves a process's own runtime figures (its pid, goroutines and
// memory statistics) as one JSON object on a loopback address, for long test runs that
// watch processes which serve no /metrics: `events` and the console. The binary starts
// it only when $REDLOCKCTL_DEBUG_ADDR names a loopback host:port; it reads nothing but
// the Go runtime and writes nothing.
package debugvars

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"time"
)

// Env names the variable holding the address to serve on (e.g. 127.0.0.1:6061).
const Env = "REDLOCKCTL_DEBUG_ADDR"

// Vars is what GET /debug/vars answers.
type Vars struct {
	PID        int    `json:"pid"`
	Goroutines int    `json:"goroutines"`
	HeapAlloc  uint64 `json:"heap_alloc_bytes"`
	HeapLive   uint64 `json:"heap_live_bytes"` // marked live by the last GC
	HeapSys    uint64 `json:"heap_sys_bytes"`
	HeapInuse  uint64 `json:"heap_inuse_bytes"`    // in spans with at least one object
	HeapFree   uint64 `json:"heap_free_bytes"`     // idle spans not yet returned to the OS
	Released   uint64 `json:"heap_released_bytes"` // returned to the OS
	Stacks     uint64 `json:"stack_bytes"`
	Sys        uint64 `json:"sys_bytes"`
	// Retained is what the runtime holds from the OS: Sys less what it returned. RSS
	// climbs towards it as the allocator first touches pages it already holds.
	Retained uint64 `json:"retained_bytes"`
	NumGC    uint32 `json:"num_gc"`
}

// Start serves Vars on addr (a loopback host:port) in the background. It fails, naming
// the variable, when addr is not a loopback address or cannot be listened on.
func Start(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("$%s=%q: %v", Env, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("$%s=%q: not a loopback address (127.0.0.1, ::1 or localhost)", Env, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("$%s: %v", Env, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/vars", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Read())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return nil
}

// Read returns this process's figures now.
func Read() Vars {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	v := Vars{PID: os.Getpid(), Goroutines: runtime.NumGoroutine(), HeapAlloc: ms.HeapAlloc,
		HeapSys: ms.HeapSys, HeapInuse: ms.HeapInuse, HeapFree: ms.HeapIdle - ms.HeapReleased,
		Released: ms.HeapReleased, Stacks: ms.StackSys, Sys: ms.Sys, Retained: ms.Sys - ms.HeapReleased, NumGC: ms.NumGC}
	if live[0].Value.Kind() == metrics.KindUint64 {
		v.HeapLive = live[0].Value.Uint64()
	}
	return v
}
