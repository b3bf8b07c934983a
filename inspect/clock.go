package inspect

import (
	"math"
	"time"
)

// Clock estimation limits.
const (
	clockSamples    = 60          // samples kept for the rate fit
	clockMinSpan    = time.Second // a rate needs samples spanning at least this
	clockMinSamples = 4           // and at least this many samples
	jumpFloor       = 25 * time.Millisecond
	jumpRemember    = time.Minute // a jump stays flagged this long
)

// ClockSample is one TIME reading: the local wall-clock instants just before the
// command was sent and just after its reply arrived, and the server's time.
type ClockSample struct {
	Sent, Received, Server time.Time
}

// Offset is server - (sent+received)/2.
func (s ClockSample) Offset() time.Duration {
	mid := s.Sent.Add(s.Received.Sub(s.Sent) / 2)
	return s.Server.Sub(mid.Round(0))
}

// Uncertainty is half the round trip.
func (s ClockSample) Uncertainty() time.Duration { return s.Received.Sub(s.Sent) / 2 }

// clockHistory is one master's recent clock samples, with jump detection.
type clockHistory struct {
	samples  []ClockSample
	lastJump time.Time
	jumpSize time.Duration
}

// add records a sample and reports whether it shows a jump: an offset step much
// larger than the two samples' uncertainty, after allowing for the measured rate (or,
// before a rate is known, a 1% drift). A jump restarts the rate fit.
func (h *clockHistory) add(s ClockSample) bool {
	jump := false
	if n := len(h.samples); n > 0 {
		prev := h.samples[n-1]
		dt := s.Received.Sub(prev.Received)
		rate, ok := h.rate()
		allow := time.Duration(math.Abs(float64(dt)) * 0.01)
		if ok {
			allow = 0
		}
		predicted := prev.Offset() + time.Duration(float64(dt)*rate/1e6)
		step := s.Offset() - predicted
		limit := max(10*(prev.Uncertainty()+s.Uncertainty()), jumpFloor) + allow
		if step > limit || step < -limit {
			jump = true
			h.lastJump, h.jumpSize = s.Received, step
			h.samples = h.samples[:0]
		}
	}
	h.samples = append(h.samples, s)
	if len(h.samples) > clockSamples {
		h.samples = append(h.samples[:0], h.samples[len(h.samples)-clockSamples:]...)
	}
	return jump
}

// rate fits offset = a + b·t by least squares over the kept samples and returns b in
// parts per million (positive: the server clock runs fast).
func (h *clockHistory) rate() (float64, bool) {
	return fitRate(h.samples)
}

func fitRate(samples []ClockSample) (float64, bool) {
	n := len(samples)
	if n < clockMinSamples || samples[n-1].Received.Sub(samples[0].Received) < clockMinSpan {
		return 0, false
	}
	t0 := samples[0].Received
	var sx, sy, sxx, sxy float64
	for _, s := range samples {
		x := s.Received.Sub(t0).Seconds()
		y := s.Offset().Seconds()
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	fn := float64(n)
	den := fn*sxx - sx*sx
	if den <= 0 {
		return 0, false
	}
	return (fn*sxy - sx*sy) / den * 1e6, true
}

// jumped reports whether a jump was seen within jumpRemember of now.
func (h *clockHistory) jumped(now time.Time) bool {
	return !h.lastJump.IsZero() && now.Sub(h.lastJump) < jumpRemember
}

// last returns the newest sample.
func (h *clockHistory) last() (ClockSample, bool) {
	if len(h.samples) == 0 {
		return ClockSample{}, false
	}
	return h.samples[len(h.samples)-1], true
}
