package inspect_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Read-only is a property of the folder: nothing under inspect/ may depend on the
// write side or on process execution, call the library's write entry points, or name a
// write command in a call. Like etcd's import restrictions, this is checked on the
// source, so that a change which breaks the promise fails here before any server sees
// it (the end-to-end tests check the masters' command statistics as well).

// forbiddenDeps are packages nothing under inspect/ may import, directly or not.
var forbiddenDeps = []string{
	"github.com/redlockctl/redlockctl/admin",
	"github.com/redlockctl/redlockctl/admin/lockrun",
	"github.com/redlockctl/redlockctl/ui",
	"github.com/redlockctl/redlockctl/internal/app/cli",
	"github.com/redlockctl/redlockctl/internal/app/demo",
	"os/exec",
}

// redlockWriters are the library's names that lead to a write: a client, a lock, a
// script to run. inspect/ uses the library only to read values (ParseValue, FenceKey,
// the Outcome constants).
var redlockWriters = map[string]bool{
	"New": true, "NewInstances": true, "Client": true, "Lock": true, "NewScript": true,
	"Script": true, "LockFrom": true, "Instance": true,
}

// writeCommands are the Redis commands (and subcommands) that change data or server
// state. A string literal naming one, passed to any call, fails the test.
var writeCommands = strings.Fields(`
	SET SETNX SETEX PSETEX GETSET GETDEL GETEX APPEND INCR INCRBY INCRBYFLOAT DECR DECRBY
	MSET MSETNX DEL UNLINK EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST RENAME RENAMENX COPY
	MOVE RESTORE MIGRATE HSET HSETNX HMSET HDEL HINCRBY HINCRBYFLOAT ZADD ZREM ZINCRBY
	ZPOPMIN ZPOPMAX ZREMRANGEBYSCORE ZREMRANGEBYRANK LPUSH RPUSH LPOP RPOP LREM LSET LTRIM
	BLPOP BRPOP LMOVE BLMOVE SADD SREM SPOP SMOVE XADD XDEL XTRIM EVAL EVALSHA FCALL
	PUBLISH SPUBLISH SCRIPT FUNCTION FLUSHALL FLUSHDB SWAPDB SAVE BGSAVE BGREWRITEAOF
	SHUTDOWN DEBUG REPLICAOF SLAVEOF FAILOVER KILL PAUSE SETUSER DELUSER REWRITE RESETSTAT`)

func TestInspectDependsOnNoWriter(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		for _, f := range forbiddenDeps {
			if d == f {
				t.Errorf("a package under inspect/ depends on %s: inspect/ must never write or run processes", f)
			}
		}
	}
}

func TestInspectSendsNoWriteCommand(t *testing.T) {
	writes := map[string]bool{}
	for _, c := range writeCommands {
		writes[c] = true
	}
	files := 0
	perDir := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		perDir[filepath.Dir(path)]++
		for _, p := range readOnlyViolations(t, path, writes) {
			t.Errorf("%s: inspect/ must never write: %s", path, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("checked only %d files", files)
	}
	// Every layer of inspect/ is read (layers_test.go at the module root lists them).
	for _, dir := range []string{".", "wire", "verdict", "poll", "carry", "locks", "live", "report", "export"} {
		if perDir[dir] == 0 {
			t.Errorf("inspect/%s: no file checked", dir)
		}
	}
}

// readOnlyViolations parses one file and returns each use of a redlock writer and each
// write command named in a call.
func readOnlyViolations(t *testing.T, path string, writes map[string]bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	redlockName := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "github.com/redlockctl/redlockctl/redlock" {
			redlockName = "redlock"
			if im.Name != nil {
				redlockName = im.Name.Name
			}
		}
	}
	var bad []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && redlockName != "" && id.Name == redlockName && redlockWriters[n.Sel.Name] {
				bad = append(bad, fmt.Sprintf("line %d uses redlock.%s", fset.Position(n.Pos()).Line, n.Sel.Name))
			}
		case *ast.CallExpr:
			for _, a := range n.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && writes[strings.ToUpper(s)] {
					bad = append(bad, fmt.Sprintf("line %d sends %s", fset.Position(lit.Pos()).Line, s))
				}
			}
		}
		return true
	})
	return bad
}
