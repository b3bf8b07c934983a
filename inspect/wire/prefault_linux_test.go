package wire

import (
	"syscall"
	"testing"
	"unsafe"
)

// resident counts the pages of b that are mapped in (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestPrefaultMapsPagesIn(t *testing.T) {
	const size = 1 << 20
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if n := resident(t, b); n != 0 {
		t.Fatalf("fresh mapping: %d pages resident, want 0", n)
	}
	b[size/2] = 7 // a page written before stays as it is
	Prefault(b[:0])
	if n := resident(t, b); n != size/4096 {
		t.Fatalf("after prefault: %d of %d pages resident (MADV_POPULATE_WRITE needs Linux 5.14)", n, size/4096)
	}
	for i, v := range b {
		if want := byte(0); i == size/2 && v != 7 || i != size/2 && v != want {
			t.Fatalf("byte %d is %d after prefault", i, v)
		}
	}

	// Under 64 KiB it is not worth a system call.
	small, err := syscall.Mmap(-1, 0, 32<<10, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(small)
	Prefault(small)
	if n := resident(t, small); n != 0 {
		t.Fatalf("32 KiB: %d pages resident after prefault, want none", n)
	}
}
