package registry

import (
	"slices"
	"strings"
	"testing"
)

// Names are sorted, Lookup names the unknown entry and the valid ones, and
// a duplicate panics.
func TestRegistry(t *testing.T) {
	t.Parallel()
	r := New[int]("pkg", "thing")
	r.Register("b", 2)
	r.Register("a", 1)
	if got := r.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names: %v, want [a b]", got)
	}
	if v, err := r.Lookup("b"); v != 2 || err != nil {
		t.Errorf("Lookup(b): %d, %v", v, err)
	}
	if _, ok := r.Get("c"); ok {
		t.Error("Get(c) found an entry never registered")
	}
	_, err := r.Lookup("c")
	if err == nil || err.Error() != `pkg: unknown thing "c" (valid: [a b])` {
		t.Errorf("Lookup(c): %v", err)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "duplicate thing a") {
			t.Errorf("a duplicate: %v, want a panic naming it", p)
		}
	}()
	r.Register("a", 3)
}
