package locks

import (
	"encoding/json"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// realValues is testdata/real-values.json: keys that other libraries' real clients
// (and replays of their own scripts) wrote on a real redis-server, recorded by the
// interop suite (go test ./e2e/interop -run TestPrecisionRealValues -update), each
// with its source.
type realValues struct {
	Captured time.Time `json:"captured"`
	Entries  []struct {
		Library string `json:"library"`
		Named   bool   `json:"named"`
		Role    string `json:"role"`
		Source  string `json:"source"`
		Entry
	} `json:"entries"`
}

// everyDecoder is every decoder of every type, each tried alone on every value.
var everyDecoder = slices.Concat(stringDecoders, hashDecoders,
	[]func(input) (Lock, bool){decodeRedisSemaphoreSet, decodeSymfonySemaphore, decodeSymfonyLock, decodeRedissonPermitSemaphore})

// TestRealValuesPrecision: on every real value, Decode names the library that wrote it
// (or guesses it, for a value shape alone), and no decoder, tried alone, names another
// library with certainty, whatever the key's role (lock, companion, bookkeeping).
func TestRealValuesPrecision(t *testing.T) {
	b, err := os.ReadFile("testdata/real-values.json")
	if err != nil {
		t.Fatal(err)
	}
	var rv realValues
	if err := json.Unmarshal(b, &rv); err != nil {
		t.Fatalf("testdata/real-values.json: %v", err)
	}
	libs := map[string]bool{}
	related := map[string]Entry{}
	for _, r := range rv.Entries {
		related[r.Key] = r.Entry
	}
	for _, r := range rv.Entries {
		libs[r.Library] = true
		if r.Role == "lock" {
			l := Decode(r.Entry, related, rv.Captured)
			switch {
			case r.Named && l.Library == r.Library && l.Recognised():
			case !r.Named && l.Library == Unknown && slices.Contains(l.Candidates, r.Library):
			case !r.Named && l.Library == Unknown && len(l.Candidates) == 0 && l.Evidence == EvidenceUUID4:
			default:
				t.Errorf("%s (%s): decoded as %s (%s), want %s named %v", r.Key, r.Source, l.Label(), l.Evidence, r.Library, r.Named)
			}
		}
		if r.Type == TypeString {
			// Identify decodes the value without its release plan, and nothing else differs.
			full := Decode(r.Entry, nil, rv.Captured)
			full.Release = Release{}
			if bare := decode(input{Entry: r.Entry, now: rv.Captured}); !reflect.DeepEqual(bare, full) {
				t.Errorf("%s without the release: %+v, want %+v", r.Key, bare, full)
			}
		}
		in := input{Entry: r.Entry, related: related, now: rv.Captured}
		for _, d := range everyDecoder {
			l, ok := d(in)
			if ok && l.Library != Unknown && l.Library != r.Library {
				t.Errorf("%s (%s %s of %s): %s names it %s (%s)", r.Key, r.Type, r.Role, r.Library, decoderName(d), l.Library, l.Evidence)
			}
		}
	}
	if len(libs) < 15 {
		t.Errorf("the fixture holds values of %d libraries, want the interop suite's 15 or more", len(libs))
	}
}

func decoderName(d func(input) (Lock, bool)) string {
	name := runtime.FuncForPC(reflect.ValueOf(d).Pointer()).Name()
	return name[strings.LastIndex(name, ".")+1:]
}
