package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/live/runner"
)

func init() {
	register(command{name: "client", summary: "one live client (native, go-sdk or ts-sdk) makes one call to an MCP server", run: clientCmd})
}

func clientCmd(ctx context.Context, env *Env, args []string) error {
	var o runner.TryOptions
	fs := newFlags(env, "client", "URL [flags]",
		"One client of the live engine makes one call to the MCP server at URL, as the clients of a run do:\n"+
			"initialize, the call, and, when the server closes the stream, a resume with Last-Event-ID after the\n"+
			"server's retry hint. It prints how the call ended and exits 0 when it completed, 1 when not.\n"+
			"Try a server by hand with it; the MCP conformance suite starts it, with the URL last, to test the\n"+
			"clients (make conformance).")
	fs.StringVar(&o.Impl, "impl", clients.ImplNative, "client `kind`: "+strings.Join(clients.Impls, ", "))
	fs.StringVar(&o.Tool, "tool", "", "`name` of the tool to call (default: one whose input schema takes events and interval_ms)")
	fs.StringVar(&o.Arguments, "args", "", "the call's arguments, a JSON object with {events}, {interval_ms} and {bytes} placeholders (`template`; default the stream tool's)")
	fs.StringVar(&o.Era, "era", "", "protocol `version` the client speaks (default 2025-11-25)")
	fs.IntVar(&o.Events, "events", 5, "the call's length in events, for {events}")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("client: want one URL, got %d arguments", len(pos))
	}
	o.URL = pos[0]
	rep, err := runner.Try(ctx, o)
	if rep != nil {
		t := rep.Designs[0].Totals
		fmt.Fprintf(env.Stdout, "%s client, %s: %d call, %d completed, %d failed; %d events delivered, %d resumes\n",
			o.Impl, o.URL, t.Calls, t.CallsCompleted, t.CallsFailed, t.EventsDelivered, t.Resumes)
	}
	return err
}
