package live

// Debugf, when set, is handed the Tracker's inner steps as it takes them: each
// generation set and removed on a master, each read settled, each attempt decided.
// It is a debugging aid for the simulator's replay (go test ./inspect/live/sim -run
// TestSchedules -sim.replay N -v prints them beside the trace); nothing else sets it.
// Each call site checks it first, so that a feed without it boxes no arguments.
var Debugf func(format string, args ...any)
