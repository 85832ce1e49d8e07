package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/live/lb"
)

func init() {
	register(command{name: "lb", summary: "run the load balancer of a live topology in its own process (the live engine starts it)", run: lbCmd})
}

func lbCmd(ctx context.Context, env *Env, args []string) error {
	var listen, control string
	o := lb.ServeOptions{Stdout: env.Stdout, Token: os.Getenv(lb.TokenEnv)}
	fs := newFlags(env, "lb", "--policy P [flags]",
		"Run a live topology's load balancer: MCP on --listen (path --path), routed to replicas with policy P,\n"+
			"and a control endpoint on --control through which the topology that started it sets the replicas,\n"+
			"the pool, the health checks and the network faults (JSON over HTTP; a bearer token from $"+lb.TokenEnv+"\n"+
			"when it is set). It prints \"lb listening on URL control URL\" when ready, and a line\n"+
			"\"lb health SLOT up|down WHY\" each time its health checks change a slot. An address fd:N is a\n"+
			"listening socket the process inherited as file descriptor N.")
	fs.StringVar(&o.Policy, "policy", "", "load-balancing `policy` (a design's lb: round-robin, sticky, hash, ...)")
	fs.StringVar(&listen, "listen", "127.0.0.1:0", "MCP `address` (host:port, or fd:N)")
	fs.StringVar(&control, "control", "127.0.0.1:0", "control endpoint `address` (host:port, or fd:N)")
	fs.StringVar(&o.Path, "path", "/mcp", "the MCP endpoint's `path`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || o.Policy == "" {
		return usagef("lb: want --policy, and no arguments")
	}
	if o.Listen, err = listenOn("listen", listen); err != nil {
		return err
	}
	if o.Control, err = listenOn("control", control); err != nil {
		o.Listen.Close()
		return err
	}
	return lb.Serve(ctx, &o)
}

// listenOn opens the listener a flag names: host:port, or fd:N for a
// listening socket inherited as file descriptor N.
func listenOn(flag, addr string) (net.Listener, error) {
	if s, ok := strings.CutPrefix(addr, "fd:"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 {
			return nil, usagef("lb: --%s %q: want fd:N with N a file descriptor of 3 or more", flag, addr)
		}
		f := os.NewFile(uintptr(n), flag)
		defer f.Close()
		ln, err := net.FileListener(f)
		if err != nil {
			return nil, usagef("lb: --%s %q: file descriptor %d is no listening socket: %v", flag, addr, n, err)
		}
		return ln, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lb: --%s %s: %w", flag, addr, err)
	}
	return ln, nil
}
