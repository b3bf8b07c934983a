package carry

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/inspect"
	"github.com/redlockctl/redlockctl/inspect/locks"
	"github.com/redlockctl/redlockctl/inspect/poll"
)

var agreeSeeds = flag.Int("carry.seeds", 400, "TestCarriersAgree: how many seeded sequences of polls to run")

// TestCarriersAgree runs a Tracker (whole snapshots) and a Carrier (streams, counts
// only) over the same seeded random sequences of polls of a small fleet: keys set,
// extended and deleted, with and without TTL, strings and hashes, single-instance
// rows; masters going down and answering again; nodes read with an error; time
// passing so that projections run out, and now and then hours or days at once (the
// Carrier's epoch moves). After every poll:
//   - the Carrier's counts equal a recount of the Tracker's snapshot, and the counts
//     the Tracker's snapshot says;
//   - both equal the counts of a model of the rules written here on its own: a
//     master's reading is carried while that master has stayed down since it was
//     read and its PTTL then, less the whole milliseconds since, is above zero; a
//     resource no master that answered has is a row of its own, Uncertain, counted by
//     the state of its last row that answered;
//   - the Tracker's LastSeen nodes are the model's carried readings, with their
//     projection, and its rows of their own are Uncertain.
//
// Polls are taken on whole milliseconds, so that the Carrier's records (whole
// milliseconds from its epoch) keep deadlines exactly; PTTLs stay below the 29 days
// beyond which a Carrier carries until the master answers. A failure names its seed
// and poll; -carry.seeds runs more.
func TestCarriersAgree(t *testing.T) {
	for seed := range uint64(*agreeSeeds) {
		if !agree(t, seed+1) {
			return
		}
	}
}

// agreeWorld is the fleet of one sequence: what each master holds, and when it was
// set.
type agreeWorld struct {
	rng     *rand.Rand
	now     time.Time
	up      []bool
	keys    []map[string]agreeKey // per master, by resource
	written int
}

type agreeKey struct {
	value string
	hash  bool      // a hash, not a string (a foreign lock)
	ms    int64     // TTL when set; -1: none
	set   time.Time // when set
}

// pttl is the key's PTTL at now (-2: expired).
func (k agreeKey) pttl(now time.Time) int64 {
	if k.ms == -1 {
		return -1
	}
	if left := k.ms - now.Sub(k.set).Milliseconds(); left > 0 {
		return left
	}
	return -2
}

// agreeRead is a reading that the model carries.
type agreeRead struct {
	at    time.Time
	ms    int64
	value string
}

// agree runs one sequence; it reports whether it passed.
func agree(t *testing.T, seed uint64) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 42))
	nm, nr := 3+rng.IntN(3), 3+rng.IntN(10)
	w := &agreeWorld{rng: rng, now: time.Unix(1_800_000_000, 0), up: make([]bool, nm), keys: make([]map[string]agreeKey, nm)}
	for i := range nm {
		w.up[i], w.keys[i] = true, map[string]agreeKey{}
	}
	res := make([]string, nr)
	for i := range res {
		res[i] = fmt.Sprintf("r%02d", i)
	}
	var tr Tracker
	var c Carrier
	reads := make([]map[string]agreeRead, nm) // the model: what each master down carries
	lastState := map[string]string{}          // the state of each resource's last row that answered
	for i := range reads {
		reads[i] = map[string]agreeRead{}
	}
	for round := range 40 {
		w.step(res)
		where := fmt.Sprintf("seed %d, poll %d", seed, round)

		// The model.
		answered := w.snapshot(res)
		for _, r := range answered.Resources {
			lastState[r.Resource] = r.State
		}
		want := inspect.Summary{MastersUp: answered.Summary.MastersUp}
		inspect.CountRows(&want, answered.Resources)
		carried := map[[2]string]int64{} // resource, master: projected PTTL
		for mi := range nm {
			if w.up[mi] {
				clear(reads[mi])
				for ri := range answered.Resources {
					r := &answered.Resources[ri]
					if n := r.Nodes[mi]; n.Error == "" && n.Type == inspect.TypeString {
						reads[mi][r.Resource] = agreeRead{at: w.now, ms: n.PTTLMs, value: n.Value}
					}
				}
				continue
			}
			for name, rd := range reads[mi] {
				proj := rd.ms - w.now.Sub(rd.at).Milliseconds()
				if rd.ms == -1 {
					proj = -1
				} else if proj <= 0 {
					delete(reads[mi], name)
					continue
				}
				carried[[2]string{name, fmt.Sprintf("m%d", mi+1)}] = proj
			}
		}
		own := map[string]bool{}
		for k := range carried {
			if !slices.ContainsFunc(answered.Resources, func(r inspect.Resource) bool { return r.Resource == k[0] }) && !own[k[0]] {
				own[k[0]] = true
				inspect.CountRows(&want, []inspect.Resource{{State: lastState[k[0]]}})
			}
		}

		// The Carrier, on a stream of the poll.
		st := poll.StreamOf(w.snapshot(res))
		c.Track(st)
		if rng.IntN(2) == 0 {
			st.EachAt(func(int, []inspect.Resource) {})
		} else if err := st.Each(func(_ []inspect.Resource, out []byte) ([]byte, error) { return out, nil }, func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		counted := st.Snapshot.Summary

		// The Tracker, on the whole snapshot of the same poll.
		s := tr.Track(w.snapshot(res))
		recount := *s
		inspect.Summarize(&recount)

		if counted != recount.Summary || s.Summary != recount.Summary || counted != want {
			t.Errorf("%s: the Carrier counts %+v; the Tracker's snapshot recounted %+v (it says %+v); the model %+v", where, counted, recount.Summary, s.Summary, want)
			return false
		}
		seen := map[[2]string]int64{}
		if len(s.Resources) != len(answered.Resources)+len(own) {
			t.Errorf("%s: the Tracker has %d rows, want %d that answered and %d of their own", where, len(s.Resources), len(answered.Resources), len(own))
			return false
		}
		for _, r := range s.Resources {
			if own[r.Resource] && (!r.Uncertain || r.State != lastState[r.Resource]) {
				t.Errorf("%s: row %s of its own: Uncertain %v, state %q; want Uncertain, in %q (its last row that answered)", where, r.Resource, r.Uncertain, r.State, lastState[r.Resource])
				return false
			}
			for _, n := range r.Nodes {
				if n.LastSeen != nil {
					seen[[2]string{r.Resource, n.Master}] = n.LastSeen.ProjectedPTTLMs
				}
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(carried) {
			t.Errorf("%s: the Tracker carries (resource, master: projected PTTL) %v, the model %v", where, seen, carried)
			return false
		}
	}
	return true
}

// step moves the world on: time passes (now and then up to 21 days), keys are set,
// extended and deleted, masters go down and answer again.
func (w *agreeWorld) step(res []string) {
	rng := w.rng
	switch d := rng.IntN(40); {
	case d < 3:
		w.now = w.now.Add(time.Duration(1+rng.IntN(21*24)) * time.Hour)
	case d < 6:
		// the same millisecond as the poll before
	default:
		w.now = w.now.Add(time.Duration(1+rng.IntN(3000)) * time.Millisecond)
	}
	for mi := range w.up {
		if rng.IntN(5) == 0 {
			w.up[mi] = !w.up[mi]
		}
	}
	for range rng.IntN(4) {
		name := res[rng.IntN(len(res))]
		w.written++
		k := agreeKey{value: fmt.Sprintf("v%d", w.written), ms: int64(1 + rng.IntN(8000)), set: w.now}
		switch rng.IntN(12) {
		case 0:
			k.ms = -1
		case 1:
			k.hash = true
		case 2:
			k.ms = int64(1 + rng.IntN(25*24*3600*1000)) // up to 25 days
		}
		for mi := range w.keys {
			switch rng.IntN(3) {
			case 0:
				w.keys[mi][name] = k
			case 1:
				if old, ok := w.keys[mi][name]; ok && rng.IntN(2) == 0 {
					old.ms, old.set = k.ms, w.now // extended
					w.keys[mi][name] = old
				} else {
					delete(w.keys[mi], name)
				}
			}
		}
	}
}

// snapshot is what a poll of the fleet reads now: a row for each resource that a
// master that answered holds, judged by how many hold its value; a master down has an
// error on every node; now and then a node is read with an error. Every call builds
// the same snapshot.
func (w *agreeWorld) snapshot(res []string) *inspect.Snapshot {
	nm := len(w.up)
	s := &inspect.Snapshot{TakenAt: w.now, Quorum: nm/2 + 1, Complete: true}
	for mi := range nm {
		m := inspect.Master{Name: fmt.Sprintf("m%d", mi+1), Up: w.up[mi]}
		if !m.Up {
			m.Error = "i/o timeout"
		}
		s.Masters = append(s.Masters, m)
	}
	for ri, name := range res {
		r := inspect.Resource{Resource: name, Key: name, Nodes: make([]inspect.Node, nm)}
		if ri%4 == 3 {
			r.Scope = locks.ScopeSingle
		}
		votes := map[string]int{}
		held := false
		for mi := range nm {
			n := &r.Nodes[mi]
			*n = inspect.Node{Master: s.Masters[mi].Name, PTTLMs: -2, Type: inspect.TypeNone}
			if !w.up[mi] {
				n.Error = s.Masters[mi].Error
				continue
			}
			k, ok := w.keys[mi][name]
			if !ok || k.pttl(w.now) == -2 {
				continue
			}
			held = true
			n.Value, n.PTTLMs, n.Type = k.value, k.pttl(w.now), inspect.TypeString
			if k.hash {
				n.Type = "hash"
			}
			// a read error on this key, the same in every build of this poll
			if (w.written*7+ri*3+mi)%23 == 0 {
				n.Error = "read error"
			}
			votes[n.Value]++
		}
		if !held {
			continue
		}
		r.State = inspect.StatePartial
		for v, k := range votes {
			if k >= s.Quorum {
				r.State, r.Value, r.Holders = inspect.StateHeld, v, k
			}
		}
		if len(votes) > 1 && r.State == inspect.StatePartial {
			r.State = inspect.StateSplit
		}
		for _, n := range r.Nodes {
			switch {
			case n.Type == "hash":
				r.State = inspect.StateForeign
			case n.PTTLMs == -1 && r.State != inspect.StateForeign:
				r.State = inspect.StateNoTTL
			}
		}
		s.Resources = append(s.Resources, r)
	}
	inspect.Summarize(s)
	for i := range s.Resources {
		s.Resources[i].Uncertain = s.Summary.MastersUp < nm
	}
	return s
}
