package errkind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockctl/redlockctl/redlock/resp"
)

// TestOf: typed errors (as redigo and net return them, possibly wrapped) and their texts
// alone get the same kind.
func TestOf(t *testing.T) {
	cases := []struct {
		err  error
		want Kind
	}{
		{redis.Error("WRONGPASS invalid username-password pair or user is disabled."), Auth},
		{fmt.Errorf("connect: %w", redis.Error("NOAUTH Authentication required.")), Auth},
		{redis.Error("NOPERM this user has no permissions to run the 'eval' command"), Auth},
		{redis.Error("READONLY You can't write against a read only replica."), Other},
		{&ClosedAtFirstReply{Err: syscall.ECONNRESET}, TLS},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, Refused},
		{fmt.Errorf("TIME: %w", context.DeadlineExceeded), Timeout},
		{&net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, DNS},
		{errors.New("redigo: bad response line terminator (possible server error or unsupported concurrent read by application)"), Protocol},
		{errors.New("read tcp 1.2.3.4:5->6.7.8.9:10: read: connection reset by peer"), Closed},
		{&resp.ClosedError{Err: io.EOF, Reply: "a bulk string of 10 bytes declared, 2 received", Received: 9}, Closed},
		{&resp.ClosedError{Err: syscall.ECONNRESET, Received: 5}, Closed},
		{fmt.Errorf("TIME: %w", &resp.ProtocolError{Problem: "bulk length \"99999999999999999999\" overflows int64"}), Protocol},
		{&resp.ProtocolError{Problem: "reply did not end before the deadline: a bulk string of 5 bytes declared, 1 received", Err: os.ErrDeadlineExceeded}, Protocol},
		{&resp.ProtocolError{Problem: "the server answered with a TLS record (a TLS-only port? dial it with TLS)"}, TLS},
		{redis.Error("READONLY You can't write against a read only replica."), Other},
		{nil, None},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %s, want %s", c.err, got, c.want)
		}
		if c.err != nil {
			if got := OfText(c.err.Error()); got != c.want {
				t.Errorf("OfText(%q) = %s, want %s (as Of)", c.err.Error(), got, c.want)
			}
		}
	}
	for k := Auth; k <= Other; k++ {
		if k.Hint() == "" {
			t.Errorf("%s has no hint", k)
		}
		b, _ := json.Marshal(struct {
			K Kind `json:"k,omitempty"`
		}{k})
		var back struct{ K Kind }
		if err := json.Unmarshal(b, &back); err != nil || back.K != k {
			t.Errorf("%s does not survive JSON: %s -> %v, %v", k, b, back.K, err)
		}
	}
	if b, _ := json.Marshal(struct {
		K Kind `json:"k,omitempty"`
	}{}); string(b) != "{}" {
		t.Errorf("None is not omitted: %s", b)
	}
}
