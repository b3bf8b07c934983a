package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers is the module's floor plan, top to bottom (docs/architecture.md draws it).
// A package may import packages of its own layer or of a layer below it, never one
// above: imports run downward. A new package belongs on a floor before it builds here.
var layers = []struct {
	name string
	pkgs []string // import paths below the module path ("" is the module root)
}{
	{"tests", []string{"e2e", "e2e/interop", "e2e/release", "deploy/kubernetes", "inspect/live/sim"}},
	{"command", []string{"", "internal/app/cli", "internal/app/cli/gendocs"}},
	{"console", []string{"ui", "internal/app/demo"}},
	{"admin", []string{"admin", "admin/lockrun"}},
	{"presentation", []string{"inspect/report", "inspect/export", "inspect/export/exporttest", "inspect/inspecttest"}},
	{"history", []string{"history", "history/pgtest"}},
	{"live", []string{"inspect/live"}},
	{"carry", []string{"inspect/carry"}},
	{"poll", []string{"inspect/poll"}},
	{"verdict", []string{"inspect/verdict"}},
	{"model", []string{"inspect"}},
	{"ground", []string{"inspect/wire", "inspect/locks"}},
	{"leaves", []string{"internal/config", "internal/errkind", "internal/exitcode", "internal/crashtest", "internal/debugvars"}},
	{"library", []string{"redlock", "redlock/resp", "redlock/topology", "redlock/redistest"}},
}

const module = "github.com/redlockctl/redlockctl"

// TestImportsRunDownward lists every package of the module with its imports (go list)
// and fails on an import of a package on a higher floor, on a package that is on no
// floor, and on a library package that imports anything but the standard library and
// redigo (the library knows nothing of the tool built on it).
func TestImportsRunDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if n := len(floors()); len(lines) < n-2 {
		t.Fatalf("go list found %d packages, the floor plan has %d", len(lines), n)
	}
	for _, v := range upward(lines) {
		t.Error(v)
	}
}

// TestUpwardImportsAreCaught: the check fails on imports that run up, on a package
// on no floor and on the library importing beyond redigo, and passes downward ones.
func TestUpwardImportsAreCaught(t *testing.T) {
	m := module + "/"
	bad := []string{
		m + "inspect " + m + "inspect/poll",
		m + "inspect/verdict " + m + "inspect/poll",
		m + "inspect/wire " + m + "inspect",
		m + "admin " + m + "ui",
		m + "redlock " + m + "internal/config",
		m + "redlock github.com/spf13/cobra",
		m + "inspect/newroom fmt",
	}
	for _, line := range bad {
		if v := upward([]string{line}); len(v) != 1 {
			t.Errorf("%q: %d violations %q, want 1", line, len(v), v)
		}
	}
	good := m + "inspect/carry " + m + "inspect/poll " + m + "inspect " + m + "inspect/locks fmt github.com/gomodule/redigo/redis"
	if v := upward([]string{good, m + "redlock github.com/gomodule/redigo/redis", m + "inspect/poll " + m + "inspect/wire"}); len(v) != 0 {
		t.Errorf("downward imports reported: %q", v)
	}
}

// floors maps each package's import path to its floor (higher imports lower).
func floors() map[string]int {
	floor := map[string]int{}
	for i, l := range layers {
		for _, p := range l.pkgs {
			floor[strings.TrimSuffix(module+"/"+p, "/")] = len(layers) - i
		}
	}
	return floor
}

// upward returns what is wrong in lines of `<package> <import>...`.
func upward(lines []string) []string {
	floor := floors()
	library := floor[module+"/redlock"]
	var out []string
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		f, ok := floor[pkg]
		if !ok {
			out = append(out, pkg+" is on no floor: add it to layers in layers_test.go and to docs/architecture.md")
			continue
		}
		for _, imp := range imports {
			if f == library && strings.Contains(strings.Split(imp, "/")[0], ".") &&
				!strings.HasPrefix(imp, module+"/") && !strings.HasPrefix(imp, "github.com/gomodule/redigo/") {
				out = append(out, pkg+" (the library) imports "+imp+": it may use only the standard library and redigo")
			}
			if g, ok := floor[imp]; ok && g > f {
				out = append(out, pkg+" ("+layerOf(pkg)+") imports "+imp+" ("+layerOf(imp)+"): imports run downward only")
			}
		}
	}
	return out
}

func layerOf(pkg string) string {
	for _, l := range layers {
		if slices.Contains(l.pkgs, strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")) {
			return l.name
		}
	}
	return "no floor"
}
