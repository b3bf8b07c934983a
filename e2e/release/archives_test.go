//go:build release

package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var (
	platforms   = []string{"linux", "darwin", "windows", "freebsd"}
	arches      = []string{"amd64", "arm64"}
	completions = map[string]string{ // file in the archive: what it must contain
		"completions/redlockctl.bash": "__start_redlockctl",
		"completions/_redlockctl":     "#compdef redlockctl",
		"completions/redlockctl.fish": "complete -c redlockctl",
	}
)

// Each platform has one archive (zip for Windows) holding the binary, the three
// completions, every man page (as docs/man has it) and the license; the binary is the
// one goreleaser built.
func TestArchives(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "man", "*.1"))
	if len(pages) < 12 {
		t.Fatalf("docs/man has %d pages", len(pages))
	}
	for _, goos := range platforms {
		for _, goarch := range arches {
			archives := ofType("Archive", goos, goarch)
			if len(archives) != 1 {
				t.Errorf("%s/%s: %d archives, want 1", goos, goarch, len(archives))
				continue
			}
			a := archives[0]
			files := readArchive(t, a)
			bin := "redlockctl"
			if goos == "windows" {
				bin += ".exe"
				if a.Extra.Format != "zip" {
					t.Errorf("%s: format %s, want zip", a.Name, a.Extra.Format)
				}
			}
			built := ofType("Binary", goos, goarch)
			if len(built) != 1 {
				t.Fatalf("%s/%s: %d binaries", goos, goarch, len(built))
			}
			want, err := os.ReadFile(built[0].path())
			if err != nil || !bytes.Equal(files[bin], want) {
				t.Errorf("%s: %s is missing or is not the binary built for %s/%s (%v)", a.Name, bin, goos, goarch, err)
			}
			for name, marker := range completions {
				if !strings.Contains(string(files[name]), marker) {
					t.Errorf("%s: %s is missing or lacks %q", a.Name, name, marker)
				}
			}
			for _, p := range pages {
				name := "man/" + filepath.Base(p) + ".gz"
				committed, _ := os.ReadFile(p)
				if page := gunzip(t, files[name]); page == nil || !bytes.Equal(page, committed) {
					t.Errorf("%s: %s is missing or differs from docs/man", a.Name, name)
				}
			}
			if !bytes.Contains(files["LICENSE"], []byte("Apache License")) {
				t.Errorf("%s: no LICENSE", a.Name)
			}
		}
	}
}

// The checksums file lists every archive and package with its SHA-256.
func TestChecksums(t *testing.T) {
	sums := ofType("Checksum", "", "")
	if len(sums) != 1 {
		t.Fatalf("%d checksum files, want 1", len(sums))
	}
	f, err := os.Open(sums[0].path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not SUM  NAME", sums[0].Name, sc.Text())
		}
		listed[name] = sum
	}
	want := append(ofType("Archive", "", ""), ofType("Linux Package", "", "")...)
	if len(want) != len(platforms)*len(arches)+4 || len(listed) != len(want) {
		t.Errorf("%d archives and packages, %d checksums; want %d archives and 4 packages, each summed",
			len(want), len(listed), len(platforms)*len(arches))
	}
	for _, a := range want {
		b, err := os.ReadFile(a.path())
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if listed[a.Name] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: checksum %q, file hashes to %x", a.Name, listed[a.Name], sum)
		}
	}
}

// The binary of this machine's archive says the release's version and commit.
func TestArchiveVersion(t *testing.T) {
	archives := ofType("Archive", runtime.GOOS, runtime.GOARCH)
	if len(archives) != 1 {
		t.Fatalf("no archive for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "redlockctl")
	if err := os.WriteFile(bin, readArchive(t, archives[0])["redlockctl"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", archives[0].Name, err, out)
	}
	checkVersion(t, archives[0].Name, string(out))
}

// checkVersion checks a --version line: the snapshot's version, its commit (-dirty
// for a modified tree), and a Go version.
func checkVersion(t *testing.T, what, out string) {
	t.Helper()
	if len(meta.Commit) != 40 {
		t.Errorf("dist/metadata.json commit %q: goreleaser did not read the commit", meta.Commit)
	}
	want := regexp.MustCompile(`^redlockctl v` + regexp.QuoteMeta(meta.Version) + ` \(revision ` + meta.Commit + `(-dirty)?, go1\.\d+[.\d]*\)\n$`)
	if !want.MatchString(out) {
		t.Errorf("%s --version: %q, want %s", what, out, want)
	}
	t.Logf("%s --version: %s", what, strings.TrimSpace(out))
}

// readArchive returns the regular files of a tar.gz or zip archive by name.
func readArchive(t *testing.T, a artifact) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(a.path())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	if strings.HasSuffix(a.Name, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatalf("%s: %s: %v", a.Name, f.Name, err)
			}
			files[f.Name], err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", a.Name, f.Name, err)
			}
		}
		return files
	}
	tr := tar.NewReader(bytes.NewReader(gunzip(t, b)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatalf("%s: %s: %v", a.Name, h.Name, err)
			}
		}
	}
}

// gunzip returns b decompressed, or nil when it is not gzip.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(fmt.Errorf("gunzip: %w", err))
	}
	return out
}
