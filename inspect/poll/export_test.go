package poll

// Exported for the external tests of this directory (package inspect_test).
var (
	TestConfig    = testConfig
	NewTestPoller = newPoller
	Do            = do
	Row           = row
)

// Hex32 is a valid 32-hex random part for test lock values.
const Hex32 = hex32
