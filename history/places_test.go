package history

import (
	"testing"

	"github.com/redlockctl/redlockctl/history/pgtest"
)

// place is where a test's store lives: a directory of the embedded store, or a
// database of a real PostgreSQL server. open gives a new handle on the same store
// (for PostgreSQL, a new writer); t.Cleanup closes it.
type place struct {
	name string
	open func(t *testing.T, readOnly bool) Backend
	pg   *pgtest.Server // nil for the embedded store
	url  string
}

// eachPlace runs fn against the embedded store and against PostgreSQL (a fresh
// database on a server this test starts): the same questions, the same answers.
func eachPlace(t *testing.T, fn func(t *testing.T, p place)) {
	t.Run("bbolt", func(t *testing.T) { fn(t, boltPlace(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgPlace(t, pgtest.Start(t))) })
}

func boltPlace(t *testing.T) place {
	dir := t.TempDir()
	return place{name: "bbolt", open: func(t *testing.T, ro bool) Backend { return openTest(t, dir, Options{ReadOnly: ro}) }}
}

// pgPlace is a fresh database on srv.
func pgPlace(t *testing.T, srv *pgtest.Server) place {
	u := srv.NewDatabase()
	return place{name: "postgres", pg: srv, url: u, open: func(t *testing.T, ro bool) Backend { return openPGTest(t, u, PGOptions{ReadOnly: ro}) }}
}

func openPGTest(t *testing.T, u string, o PGOptions) *PG {
	t.Helper()
	p, err := OpenPG(u, pgtest.Password, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
