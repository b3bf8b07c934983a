//go:build release

package release

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// dist is the snapshot's directory, relative to this package.
var dist = filepath.Join("..", "..", "dist")

// artifact is one entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"` // relative to the repository's root
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		Format string `json:"Format"`
	} `json:"extra"`
}

// metadata is goreleaser's dist/metadata.json.
type metadata struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

var (
	artifacts []artifact
	meta      metadata
)

// TestMain reads the snapshot's artifact list and metadata; without them nothing can
// be tested, and the run fails.
func TestMain(m *testing.M) {
	if err := readDist(); err != nil {
		fmt.Fprintf(os.Stderr, "\nRELEASE-CHECK FAILED: %v\nRun `make release-check`: it builds dist/ with goreleaser first.\n\n", err)
		os.Exit(1)
	}
	state, err := os.MkdirTemp("", "redlockctl-release-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

func readDist() error {
	b, err := os.ReadFile(filepath.Join(dist, "artifacts.json"))
	if err != nil {
		return fmt.Errorf("no goreleaser snapshot in dist/: %w", err)
	}
	if err := json.Unmarshal(b, &artifacts); err != nil {
		return fmt.Errorf("dist/artifacts.json: %w", err)
	}
	b, err = os.ReadFile(filepath.Join(dist, "metadata.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return fmt.Errorf("dist/metadata.json: %w", err)
	}
	if meta.Version == "" || len(artifacts) == 0 {
		return fmt.Errorf("dist/ holds no version or no artifact")
	}
	return nil
}

// ofType returns the artifacts of type typ (as artifacts.json names it), for goos
// and goarch when given.
func ofType(typ, goos, goarch string) []artifact {
	var out []artifact
	for _, a := range artifacts {
		if a.Type == typ && (goos == "" || a.Goos == goos) && (goarch == "" || a.Goarch == goarch) {
			out = append(out, a)
		}
	}
	return out
}

// path is a's file, relative to this package.
func (a artifact) path() string { return filepath.Join("..", "..", a.Path) }
