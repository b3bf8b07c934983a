package demo

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2/server"
)

// clocks advances every master's clock each tick: TTLs shrink by the master's virtual
// elapsed time (FastForward) and TIME reads start+offset+virtual (SetTime). miniredis does
// not expire keys by itself; this is what makes them expire. The fast master's clock is
// stepped back (a visible jump) once it is two seconds ahead.
func (w *World) clocks(ctx context.Context) {
	t := time.NewTicker(w.opts.Tick)
	defer t.Stop()
	start := time.Now()
	last := start
	for _, m := range w.masters {
		m.mu.Lock()
		m.base, m.tickAt = start, start
		m.mu.Unlock()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d := now.Sub(last)
			last = now
			for _, m := range w.masters {
				m.mu.Lock()
				vd := time.Duration(float64(d) * m.rate)
				m.virt += vd
				if m.rate != 1 && m.virt-now.Sub(start) > 2*time.Second {
					m.virt = now.Sub(start) // NTP steps the clock back
					w.opts.Logf("demo: %s clock stepped back to real time", m.name)
				}
				wall := start.Add(m.offset + m.virt)
				m.tickAt = now
				m.mu.Unlock()
				m.mr.FastForward(vd)
				m.mr.SetTime(wall)
			}
		}
	}
}

// outages takes the flaky master down now and then and brings it back on the same
// port, empty, as a Redis without persistence would come back.
func (w *World) outages(ctx context.Context) {
	var fl *master
	for _, m := range w.masters {
		if m.flaky {
			fl = m
		}
	}
	if fl == nil {
		<-ctx.Done()
		return
	}
	if !sleep(ctx, w.opts.DownAfter) {
		return
	}
	for {
		w.opts.Logf("demo: %s goes down", fl.name)
		fl.mu.Lock()
		fl.up = false
		fl.mu.Unlock()
		if fl.proc != nil {
			fl.proc.stop() // killed: its data, in memory only, is gone
		} else {
			fl.mr.Close()
		}
		if !sleep(ctx, w.opts.DownFor) {
			return
		}
		if fl.mr != nil {
			fl.mr.FlushAll()
		}
		for {
			var err error
			if fl.proc != nil {
				err = fl.proc.restart()
			} else {
				err = fl.mr.StartAddr(fl.addr)
			}
			if err == nil {
				break
			}
			w.opts.Logf("demo: %s restart on %s: %v (retrying)", fl.name, fl.addr, err)
			if !sleep(ctx, time.Second) {
				return
			}
		}
		fl.mu.Lock()
		fl.up, fl.started, fl.runID = true, time.Now(), randHex(20)
		fl.mu.Unlock()
		if fl.mr != nil {
			fl.installHook()
		}
		w.opts.Logf("demo: %s is back, empty", fl.name)
		if !sleep(ctx, w.opts.DownEvery-w.opts.DownFor) {
			return
		}
	}
}

// installHook answers INFO (server, replication, persistence) and CONFIG GET, which
// miniredis does not implement, with what a plain Redis master without persistence says.
func (m *master) installHook() {
	srv := m.mr.Server()
	if srv == nil {
		return
	}
	srv.SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		switch cmd {
		case "TIME":
			// Between ticks miniredis would answer the last SetTime; answer the
			// master's clock to the microsecond instead, so offsets and rates
			// measured against it are smooth.
			if len(args) > 0 {
				return false
			}
			t := m.now()
			c.WriteLen(2)
			c.WriteBulk(strconv.FormatInt(t.Unix(), 10))
			c.WriteBulk(strconv.FormatInt(int64(t.Nanosecond()/1000), 10))
			return true
		case "INFO":
			secs := map[string]bool{}
			for _, a := range args {
				secs[strings.ToLower(a)] = true
			}
			if len(args) == 0 || secs["all"] || secs["everything"] || secs["default"] {
				secs = map[string]bool{"server": true, "replication": true, "persistence": true}
			}
			if !secs["server"] && !secs["replication"] && !secs["persistence"] {
				return false // clients, stats: miniredis answers
			}
			c.WriteBulk(m.info(secs))
			return true
		case "CONFIG":
			if len(args) < 2 || !strings.EqualFold(args[0], "GET") {
				c.WriteError("ERR CONFIG " + strings.Join(args, " ") + " is not supported by the demo masters")
				return true
			}
			known := map[string]string{
				"appendonly": "no", "appendfsync": "everysec", "maxmemory": "0",
				"maxmemory-policy": "noeviction", "save": "",
			}
			var out []string
			for _, p := range args[1:] {
				if v, ok := known[strings.ToLower(p)]; ok {
					out = append(out, strings.ToLower(p), v)
				}
			}
			c.WriteStrings(out)
			return true
		}
		return false
	})
}

// now is the master's wall clock: the world's start, its offset, the virtual time run
// at its rate up to the last tick, and the time since that tick at its rate.
func (m *master) now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.base.IsZero() {
		return time.Now().Add(m.offset)
	}
	since := time.Duration(float64(time.Since(m.tickAt)) * m.rate)
	return m.base.Add(m.offset + m.virt + since)
}

func (m *master) info(secs map[string]bool) string {
	m.mu.Lock()
	up := time.Since(m.started)
	runID := m.runID
	m.mu.Unlock()
	_, port, _ := net.SplitHostPort(m.addr)
	var b strings.Builder
	if secs["server"] {
		fmt.Fprintf(&b, "# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\nos:demo (miniredis)\r\nrun_id:%s\r\ntcp_port:%s\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\n\r\n",
			runID, port, int64(up.Seconds()), int64(up.Hours()/24))
	}
	if secs["replication"] {
		fmt.Fprintf(&b, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:%s\r\n\r\n", runID)
	}
	if secs["persistence"] {
		b.WriteString("# Persistence\r\nloading:0\r\naof_enabled:0\r\nrdb_changes_since_last_save:0\r\n\r\n")
	}
	return b.String()
}
