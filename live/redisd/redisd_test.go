package redisd

import (
	"context"
	"net"
	"testing"
)

// A server starts on loopback, answers, restarts on the same address, and
// leaves no process behind when closed.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	s, err := Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(s.Addr())
	if host != "127.0.0.1" {
		t.Errorf("listening on %s, want loopback", s.Addr())
	}
	first := s.PID()
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if Alive(first) {
		t.Errorf("the first process %d survived the restart", first)
	}
	if err := ping(s.Addr()); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	second := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s.Close() // a stopped server is killed too
	if Alive(second) {
		t.Errorf("redis-server %d outlived Close", second)
	}
}
