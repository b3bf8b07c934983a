package verdict

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sample builds a TIME reading at local instant at with the given round trip and a
// server clock offset off.
func sample(at time.Duration, rtt time.Duration, off time.Duration) ClockSample {
	sent := t0.Add(at)
	recv := sent.Add(rtt)
	return ClockSample{Sent: sent, Received: recv, Server: sent.Add(rtt / 2).Add(off)}
}

func TestClockSampleOffset(t *testing.T) {
	s := sample(0, 4*time.Millisecond, 5*time.Second)
	if s.Offset() != 5*time.Second || s.Uncertainty() != 2*time.Millisecond {
		t.Fatalf("offset %v ± %v, want 5s ± 2ms", s.Offset(), s.Uncertainty())
	}
}

func TestClockRateAndJump(t *testing.T) {
	tests := []struct {
		name     string
		rate     float64 // server runs this fraction fast
		jumpAt   int     // sample index where the clock steps forward (-1: never)
		step     time.Duration
		wantPPM  float64
		wantRate bool
		wantJump bool
	}{
		{"steady", 0, -1, 0, 0, true, false},
		{"2% fast", 0.02, -1, 0, 20000, true, false},
		{"50ppm slow", -0.00005, -1, 0, -50, true, false},
		{"forward jump", 0, 10, 2 * time.Second, 0, true, true},
		{"backward jump", 0, 10, -300 * time.Millisecond, 0, true, true},
		{"small step under the floor", 0, 10, 10 * time.Millisecond, -1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h ClockHistory
			jumped := false
			off := time.Duration(0)
			for i := 0; i < 20; i++ {
				at := time.Duration(i) * 200 * time.Millisecond
				if i == tt.jumpAt {
					off += tt.step
				}
				o := off + time.Duration(float64(at)*tt.rate)
				if h.Add(sample(at, 200*time.Microsecond, o)) {
					jumped = true
				}
			}
			if jumped != tt.wantJump {
				t.Errorf("jump = %v, want %v", jumped, tt.wantJump)
			}
			ppm, ok := h.Rate()
			if tt.wantPPM == -1 { // a sub-floor step biases the fit: only the jump verdict matters
				return
			}
			if ok != tt.wantRate || math.Abs(ppm-tt.wantPPM) > 1+math.Abs(tt.wantPPM)*0.001 {
				t.Errorf("rate = %.1f ppm (%v), want %.1f (%v)", ppm, ok, tt.wantPPM, tt.wantRate)
			}
			if h.Jumped(t0.Add(5*time.Second)) != tt.wantJump {
				t.Errorf("jumped() disagrees with the jump seen")
			}
		})
	}
}

func TestClockRateNeedsSpan(t *testing.T) {
	var h ClockHistory
	for i := 0; i < 10; i++ {
		h.Add(sample(time.Duration(i)*10*time.Millisecond, time.Millisecond, 0))
	}
	if _, ok := h.Rate(); ok {
		t.Fatal("rate reported from samples spanning 90ms")
	}
}

// A busy host: most samples are tight, a few have long round trips whose midpoint is
// off by up to half of it. The true rate is 0; the weighted fit must not report a rate
// worth a finding, and must stay silent while its error is large.
func TestClockRateIgnoresJitter(t *testing.T) {
	var h ClockHistory
	for i := 0; i < 8; i++ {
		at := time.Duration(i) * 250 * time.Millisecond
		rtt, skew := 200*time.Microsecond, time.Duration(0)
		if i == 5 || i == 7 { // a slow sample whose reply was held up on the way back
			rtt, skew = 12*time.Millisecond, -5*time.Millisecond
		}
		s := sample(at, rtt, skew)
		h.Add(s)
	}
	if ppm, ok := h.Rate(); ok && math.Abs(ppm) > rateWarnPPM/2 {
		t.Fatalf("rate %.0f ppm from jitter alone on a clock that keeps time", ppm)
	}
	ppm, errPPM, ok := fitRate(h.Samples)
	if !ok || errPPM <= 0 {
		t.Fatalf("fitRate = %.0f ± %.0f (%v): want an estimate with an error", ppm, errPPM, ok)
	}
	var unweighted ClockHistory // the same offsets with equal weight show why weights matter
	for i, s := range h.Samples {
		u := sample(time.Duration(i)*250*time.Millisecond, 200*time.Microsecond, s.Offset())
		unweighted.Add(u)
	}
	if p, _, _ := fitRate(unweighted.Samples); math.Abs(p) < rateWarnPPM {
		t.Fatalf("control: equal weights give %.0f ppm; the jitter in this test is too mild to prove anything", p)
	}
}
