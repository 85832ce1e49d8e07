// Package registry is the small table of named things the scenario file
// picks by name: fault kinds, load-balancer policies, client profiles.
// Each kind registers itself at init time, usually from its own file;
// Names lists them sorted, for validation messages and help.
//
//	var policies = registry.New[func(*Options) Policy]("topology", "lb policy")
//	func init() { policies.Register("round-robin", newRoundRobin) }
//	f, err := policies.Lookup(name) // "topology: unknown lb policy "x" (valid: [...])"
//
// A Registry is written only at init time and read after, so it needs no
// lock.
package registry

import (
	"fmt"
	"sort"
)

// Registry maps names to values of one kind.
type Registry[T any] struct {
	pkg, what string
	m         map[string]T
}

// New returns an empty registry whose messages begin with pkg and call an
// entry what ("fault kind", "lb policy").
func New[T any](pkg, what string) *Registry[T] {
	return &Registry[T]{pkg: pkg, what: what, m: map[string]T{}}
}

// Register adds v under name. It panics on a duplicate, which is a
// programming error.
func (r *Registry[T]) Register(name string, v T) {
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("%s: duplicate %s %s", r.pkg, r.what, name))
	}
	r.m[name] = v
}

// Get returns the value registered under name.
func (r *Registry[T]) Get(name string) (T, bool) {
	v, ok := r.m[name]
	return v, ok
}

// Lookup returns the value registered under name, or an error that names
// it and lists the valid names.
func (r *Registry[T]) Lookup(name string) (T, error) {
	v, ok := r.m[name]
	if !ok {
		return v, fmt.Errorf("%s: unknown %s %q (valid: %v)", r.pkg, r.what, name, r.Names())
	}
	return v, nil
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	n := make([]string, 0, len(r.m))
	for k := range r.m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
