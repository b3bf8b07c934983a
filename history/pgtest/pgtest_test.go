package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStart: the server answers with the password and refuses a wrong one; its
// CPU time is read.
func TestStart(t *testing.T) {
	s := Start(t)
	u := s.NewDatabase()
	c := s.Conn(u)
	var v string
	if err := c.QueryRow(context.Background(), "SHOW server_version").Scan(&v); err != nil || v == "" {
		t.Fatalf("server_version %q: %v", v, err)
	}
	if s.CPU() <= 0 {
		t.Errorf("CPU %v: a server that started and answered has used some", s.CPU())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bad := strings.Replace(u, User+"@", User+":wrong@", 1)
	if c, err := pgx.Connect(ctx, bad); err == nil {
		c.Close(ctx)
		t.Fatal("a wrong password was accepted")
	}
}
