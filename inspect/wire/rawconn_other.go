//go:build !linux

package wire

import (
	"io"
	"net"
)

// newRawTCP returns nc: raw system calls on the socket (rawconn_linux.go) are a
// Linux-only saving.
func newRawTCP(nc net.Conn) io.ReadWriter { return nc }
