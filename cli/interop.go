package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/stormsim/stormsim/live/interop"
)

func init() {
	register(command{name: "interop", summary: "run the real-client × real-server matrix and write matrix.md and matrix.json", run: interopCmd})
}

const interopAbout = `Run every client (stormsim's native client with the compliant profile, the official go-sdk
client, the official TypeScript SDK client) against every server (the reference replica, the
go-sdk server, the TypeScript SDK server) on memory-sticky, and on redis-shared where the server
can share sessions (the reference replica only), each through a hard restart of one replica and
through a client drop, on the live engine. It writes OUT/matrix.md and OUT/matrix.json: per cell
the calls, the calls done and failed, the 404s, the events lost, the resumes and the first
error. The TypeScript SDK must be installed (make node). The full matrix takes about 2 minutes.`

func interopCmd(ctx context.Context, env *Env, args []string) error {
	var file, out string
	var reduced bool
	var n, parallel int
	fs := newFlags(env, "interop", "[flags]", interopAbout)
	fs.StringVar(&file, "file", DefaultFile, "the scenarios `file` whose designs and defaults the matrix extends")
	fs.StringVar(&out, "out", "results/interop", "the output `folder`")
	fs.BoolVar(&reduced, "reduced", false, "the reduced matrix: memory-sticky, the hard restart only")
	fs.IntVar(&n, "clients", 0, "clients per cell (`N`; 0: 60, or 30 reduced)")
	fs.IntVar(&parallel, "parallel", 3, "cells run at once (`N`)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("interop: no arguments, only flags")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	m, err := interop.Run(ctx, &interop.Options{Bin: exe, Base: file, Dir: out, Reduced: reduced, Clients: n, Parallel: parallel})
	if err != nil {
		return err
	}
	fmt.Fprint(env.Stdout, m.Markdown())
	fmt.Fprintf(env.Stdout, "\nwrote %s/matrix.md and %s/matrix.json\n", out, out)
	return nil
}
