package locks

import "testing"

// Every known bookkeeping key is found by its name and type (past the length filter
// that spares other keys the lookup), and a key of another length never is.
func TestBookkeepingKeysAreFound(t *testing.T) {
	for key, b := range bookkeeping {
		value := "1"
		if got, ok := BookkeepingOf(key, b.typ, value); !ok || got != b.Bookkeeping {
			t.Errorf("BookkeepingOf(%q, %q) = %v, %v; want %v", key, b.typ, got, ok, b.Bookkeeping)
		}
		if _, ok := BookkeepingOf(key+"x", b.typ, value); ok {
			t.Errorf("BookkeepingOf(%q) found a bookkeeping key", key+"x")
		}
	}
}
