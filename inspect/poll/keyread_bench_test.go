package poll

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlockctl/redlockctl/redlock/redistest"
)

// BenchmarkReadKeysRedigo measures the live feed's read of a few lock keys (ReadKeys
// through RedigoPipe on one connection), as it reads keys that changed: CPU and
// allocations per read of four keys.
func BenchmarkReadKeysRedigo(b *testing.B) {
	srv := redistest.StartN(b, 1, redistest.Options{})[0]
	keys := make([]string, 4)
	c := srv.Pool.Get()
	for i := range keys {
		keys[i] = fmt.Sprintf("lk:%d", i)
		if _, err := c.Do("SET", keys[i], fmt.Sprintf("owner-%d#0123456789abcdef", i), "PX", 600000); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	conn := srv.Pool.Get()
	defer conn.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if _, err := ReadKeys(RedigoPipe(ctx, conn), keys); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
