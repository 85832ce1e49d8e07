package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/stormsim/stormsim/report"
)

func init() {
	register(command{name: "version", summary: "print stormsim's version (also --version)", run: versionCmd})
}

// versionCmd prints the version reports carry, with the Go toolchain and,
// when the binary was built from a git checkout, its commit.
func versionCmd(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "version", "", "Print stormsim's version, the report.json schema it writes, the Go version and the commit it was built from.")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("version: takes no arguments, got %d", len(pos))
	}
	fmt.Fprintf(env.Stdout, "stormsim %s (report schema %d, %s", report.Version, report.Schema, runtime.Version())
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			fmt.Fprintf(env.Stdout, ", commit %s", rev)
			if dirty {
				fmt.Fprint(env.Stdout, " with local changes")
			}
		}
	}
	fmt.Fprintln(env.Stdout, ")")
	return nil
}
