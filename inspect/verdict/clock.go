package verdict

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
	maxRateErrPPM   = 100.0       // a rate is reported once its standard error is this small
	rateNoiseFloor  = 50 * time.Microsecond
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

// ClockHistory is one master's recent clock samples, with jump detection.
type ClockHistory struct {
	Samples  []ClockSample
	lastJump time.Time
	jumpSize time.Duration
}

// Add records a sample and reports whether it shows a jump: an offset step much
// larger than the two samples' uncertainty, after allowing for the measured rate (or,
// before a rate is known, a 1% drift). A jump restarts the rate fit.
func (h *ClockHistory) Add(s ClockSample) bool {
	jump := false
	if n := len(h.Samples); n > 0 {
		prev := h.Samples[n-1]
		dt := s.Received.Sub(prev.Received)
		rate, ok := h.Rate()
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
			h.Samples = h.Samples[:0]
		}
	}
	h.Samples = append(h.Samples, s)
	if len(h.Samples) > clockSamples {
		h.Samples = append(h.Samples[:0], h.Samples[len(h.Samples)-clockSamples:]...)
	}
	return jump
}

// Rate fits offset = a + b·t over the kept samples and returns b in parts per million
// (positive: the server clock runs fast). It reports a rate only once the fit's standard
// error is below maxRateErrPPM: a rate from a second of jittery samples would be noise,
// and a doctor finding built on noise is a false alarm.
func (h *ClockHistory) Rate() (float64, bool) {
	ppm, errPPM, ok := fitRate(h.Samples)
	return ppm, ok && errPPM <= maxRateErrPPM
}

// fitRate is a weighted least-squares fit of offset over time. Each sample weighs
// 1/σ², with σ = u/√3 the deviation of an error spread evenly over ±u (u: half the round
// trip, floored at rateNoiseFloor), so a sample taken while the host was busy counts for
// little. errPPM is the slope's
// standard error, scaled up when the residuals say the uncertainties were optimistic.
func fitRate(samples []ClockSample) (ppm, errPPM float64, ok bool) {
	n := len(samples)
	if n < clockMinSamples || samples[n-1].Received.Sub(samples[0].Received) < clockMinSpan {
		return 0, 0, false
	}
	t0 := samples[0].Received
	xs, ys, ws := make([]float64, n), make([]float64, n), make([]float64, n)
	var sw, swx, swy float64
	for i, s := range samples {
		sigma := max(s.Uncertainty(), rateNoiseFloor).Seconds() / math.Sqrt(3)
		xs[i], ys[i], ws[i] = s.Received.Sub(t0).Seconds(), s.Offset().Seconds(), 1/(sigma*sigma)
		sw += ws[i]
		swx += ws[i] * xs[i]
		swy += ws[i] * ys[i]
	}
	mx, my := swx/sw, swy/sw
	var sxx, sxy float64
	for i := range xs {
		sxx += ws[i] * (xs[i] - mx) * (xs[i] - mx)
		sxy += ws[i] * (xs[i] - mx) * (ys[i] - my)
	}
	if sxx <= 0 {
		return 0, 0, false
	}
	b := sxy / sxx
	var chi2 float64
	for i := range xs {
		r := ys[i] - (my + b*(xs[i]-mx))
		chi2 += ws[i] * r * r
	}
	scale := max(chi2/float64(n-2), 1)
	return b * 1e6, math.Sqrt(scale/sxx) * 1e6, true
}

// Jumped reports whether a jump was seen within jumpRemember of now.
func (h *ClockHistory) Jumped(now time.Time) bool {
	return !h.lastJump.IsZero() && now.Sub(h.lastJump) < jumpRemember
}

// Last returns the newest sample.
func (h *ClockHistory) Last() (ClockSample, bool) {
	if len(h.Samples) == 0 {
		return ClockSample{}, false
	}
	return h.Samples[len(h.Samples)-1], true
}
