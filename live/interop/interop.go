// Package interop runs the real-client × real-server matrix on the live
// engine: clients {stormsim's native client with the compliant profile, the
// official go-sdk client, the official TypeScript SDK client} × servers
// {stormsim's reference replica, the go-sdk server, the TypeScript SDK
// server} × designs {memory-sticky; redis-shared where the server can share
// sessions, which only the reference replica can}, each on a hard restart
// and on a client drop. It writes matrix.json and matrix.md: per cell the
// calls, failed calls, 404s, events lost, resumes and the first error.
//
//	m, err := interop.Run(ctx, &interop.Options{Bin: "bin/stormsim", Base: "scenarios.toml", Dir: "results/interop"})
package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stormsim/stormsim/clients"
	"github.com/stormsim/stormsim/history"
	"github.com/stormsim/stormsim/live/runner"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// Options configures a matrix run. A nil *Options means the full matrix
// with the defaults.
type Options struct {
	Bin  string // the stormsim binary the replicas run
	Base string // the scenarios file whose designs and defaults the matrix extends; scenarios.toml by default
	Dir  string // where matrix.json, matrix.md and the matrix's scenarios file go
	// Reduced runs the small matrix make test runs: memory-sticky only, on
	// the hard restart only, with Clients clients.
	Reduced bool
	// Clients is the number of clients of each cell; 0 means 60 (30 when
	// Reduced).
	Clients int
	// Parallel is how many cells run at once; 0 means 3.
	Parallel int
}

// Client and server flavours of the matrix.
var (
	Clients = []string{"native", clients.ImplGoSDK, clients.ImplTSSDK}
	Servers = []string{topology.ServerReference, topology.ServerGoSDK, topology.ServerTSSDK}
	Designs = []string{"memory-sticky", "redis-shared"}
	Faults  = []string{"hard-restart", "client-drop"}
)

// Cell is one client × server × design × fault run.
type Cell struct {
	Client      string `json:"client"`
	Server      string `json:"server"`
	Design      string `json:"design"`
	Fault       string `json:"fault"`
	Calls       int64  `json:"calls"`
	Completed   int64  `json:"calls_completed"`
	FailedCalls int64  `json:"calls_failed"`
	HTTP404     int64  `json:"http_404"`
	EventsLost  int64  `json:"events_lost"`
	Resumes     int64  `json:"resumes"`
	FirstError  string `json:"first_error"`
	Saturated   bool   `json:"host_saturated,omitempty"`
}

// Matrix is every cell, in a stable order.
type Matrix struct {
	Clients int    `json:"clients"`
	Seed    uint64 `json:"seed"`
	Reduced bool   `json:"reduced,omitempty"`
	Cells   []Cell `json:"cells"`
}

// supported says whether a server can run a design: only the reference
// replica shares sessions between replicas.
func supported(server, design string) bool {
	return design == "memory-sticky" || server == topology.ServerReference
}

// name is a cell's design name in the matrix's scenarios file.
func name(client, server, design string) string {
	return "ix-" + client + "-" + server + "-" + design
}

// scenarioText is the matrix's designs and its two scenarios, appended to
// the base file.
func scenarioText(clientsN int) string {
	var b strings.Builder
	b.WriteString("\n# The interop matrix (live/interop), appended by make interop.\n")
	for _, c := range Clients {
		for _, s := range Servers {
			for _, d := range Designs {
				if !supported(s, d) {
					continue
				}
				fmt.Fprintf(&b, "[design.%s]\nmode = \"stateful\"\nlb = \"sticky\"\nserver = %q\n", name(c, s, d), s)
				if d == "memory-sticky" {
					b.WriteString("sessions = \"local\"\nevents = \"memory\"\n")
				} else {
					b.WriteString("sessions = \"shared\"\nevents = \"redis\"\n")
				}
				if s == topology.ServerTSSDK {
					fmt.Fprintf(&b, "[design.%s.store]\nmemory_cap_bytes = 0\n", name(c, s, d))
				}
				switch c {
				case "native":
					fmt.Fprintf(&b, "[design.%s.client]\nprofile = \"compliant\"\n", name(c, s, d))
				default:
					fmt.Fprintf(&b, "[design.%s.client]\nprofile = %q\nimpl = %q\n", name(c, s, d), c, c)
				}
				b.WriteString("\n")
			}
		}
	}
	// Three replicas, not two: a go-sdk client sends two requests without a
	// session before its session exists (server/discover, then
	// initialize), and round robin over two replicas would then put every
	// go-sdk session on the same one.
	common := fmt.Sprintf("duration = \"20s\"\ndrain = \"8s\"\nreplicas = 3\n[scenario.%%[1]s.workload]\nclients = %d\narrival_rate = %d\nthink = \"1s\"\nevents_min = 10\nevents_max = 30\ndrop_every = \"0s\"\n[scenario.%%[1]s.replica]\ndrain_limit = \"5s\"\n", clientsN, max(clientsN/2, 1))
	b.WriteString("[scenario.interop-hard-restart]\ndescription = \"The interop matrix: replica 0 of 3 is killed at 8 s and back 2 s later.\"\n")
	fmt.Fprintf(&b, common, "interop-hard-restart")
	b.WriteString("[[scenario.interop-hard-restart.faults]]\nkind = \"restart\"\nreplica = 0\nat = \"8s\"\ndowntime = \"2s\"\ngraceful = false\n\n")
	b.WriteString("[scenario.interop-client-drop]\ndescription = \"The interop matrix: half the clients with an open stream drop at 8 s for 1 s.\"\n")
	fmt.Fprintf(&b, common, "interop-client-drop")
	b.WriteString("[[scenario.interop-client-drop.faults]]\nkind = \"client-drop\"\nat = \"8s\"\nfraction = 0.5\naway = \"1s\"\n")
	return b.String()
}

// Run runs the matrix and writes it to opts.Dir.
func Run(ctx context.Context, opts *Options) (*Matrix, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Base == "" {
		o.Base = "scenarios.toml"
	}
	if o.Dir == "" {
		return nil, errors.New("interop: no output folder")
	}
	if o.Clients == 0 {
		o.Clients = 60
		if o.Reduced {
			o.Clients = 30
		}
	}
	if o.Parallel == 0 {
		o.Parallel = 3
	}
	base, err := os.ReadFile(o.Base)
	if err != nil {
		return nil, fmt.Errorf("interop: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	file, err := filepath.Abs(filepath.Join(o.Dir, "interop.toml"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, append(base, scenarioText(o.Clients)...), 0o644); err != nil {
		return nil, err
	}
	m := &Matrix{Clients: o.Clients, Reduced: o.Reduced}
	faults, designs := Faults, Designs
	if o.Reduced {
		faults, designs = Faults[:1], Designs[:1]
	}
	for _, f := range faults {
		var names []string
		cellOf := map[string][3]string{}
		for _, c := range Clients {
			for _, s := range Servers {
				for _, d := range designs {
					if supported(s, d) {
						names = append(names, name(c, s, d))
						cellOf[name(c, s, d)] = [3]string{c, s, d}
					}
				}
			}
		}
		set := []string{"designs=[\"" + strings.Join(names, "\",\"") + "\"]"}
		f0, err := scenario.Load(file, &scenario.Options{Set: set, Target: "interop-" + f})
		if err != nil {
			return nil, fmt.Errorf("interop: %w", err)
		}
		sc, err := f0.Scenario("interop-" + f)
		if err != nil {
			return nil, fmt.Errorf("interop: %w", err)
		}
		m.Seed = sc.Seed
		out, err := runner.Run(ctx, sc, &runner.Options{Bin: o.Bin, File: file, Parallel: o.Parallel, Set: set})
		if err != nil {
			return nil, fmt.Errorf("interop: %s: %w", f, err)
		}
		saturated := out.Report.Host != nil && out.Report.Host.Saturated
		for _, d := range out.Report.Designs {
			k := cellOf[d.Name]
			c, s, design := k[0], k[1], k[2]
			t := d.Totals
			m.Cells = append(m.Cells, Cell{Client: c, Server: s, Design: design, Fault: f,
				Calls: t.Calls, Completed: t.CallsCompleted, FailedCalls: t.CallsFailed, HTTP404: t.HTTP404,
				EventsLost: t.EventsLost, Resumes: t.Resumes, FirstError: firstError(out.Histories[d.Name]), Saturated: saturated})
		}
	}
	order := func(v string, in []string) int { return slices.Index(in, v) }
	sort.SliceStable(m.Cells, func(i, j int) bool {
		a, b := m.Cells[i], m.Cells[j]
		ka := []int{order(a.Fault, Faults), order(a.Design, Designs), order(a.Client, Clients), order(a.Server, Servers)}
		kb := []int{order(b.Fault, Faults), order(b.Design, Designs), order(b.Client, Clients), order(b.Server, Servers)}
		return slices.Compare(ka, kb) < 0
	})
	js, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(o.Dir, "matrix.json"), append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "matrix.md"), []byte(m.Markdown()), 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

// firstError is the first thing that went wrong in a cell's history: the
// earliest failed call's error, a request that failed, or one answered
// 400 or more (but a 4xx to a request that is not part of the protocol's
// flow, a method probe), whichever came first.
func firstError(h *history.History) string {
	if h == nil {
		return ""
	}
	at, msg := int64(-1), ""
	note := func(t int64, m string) {
		if m != "" && (at < 0 || t < at) {
			at, msg = t, m
		}
	}
	for _, c := range h.Calls {
		if c.Err != "" {
			note(c.End, c.Err)
		}
	}
	for _, q := range h.Requests {
		switch {
		case q.Err != "" && q.Status == 0:
			note(q.Answered, q.Err)
		case (q.Kind == clients.ReqNone || q.Kind == clients.ReqDiscover) && q.Status >= 400 && q.Status < 500:
			// A probe for a method the server may not have (go-sdk's
			// server/discover, which a server of a 2025 era refuses
			// before the SDK falls back to initialize): the answer is the
			// protocol working.
		case q.Status >= 400:
			note(q.Answered, "HTTP "+strconv.Itoa(q.Status)+" on "+reqName(q))
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 120 {
		msg = msg[:117] + "..."
	}
	return msg
}

func reqName(q history.Request) string {
	switch q.Kind {
	case clients.ReqInitialize:
		return "initialize"
	case clients.ReqInitialized:
		return "initialized"
	case clients.ReqCall:
		return "tools/call"
	case clients.ReqResume:
		return "resume GET"
	case clients.ReqStandalone:
		return "standalone GET"
	case clients.ReqDelete:
		return "DELETE"
	}
	return "a request"
}

// Markdown is the matrix as tables, one per fault and design.
func (m *Matrix) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Interop matrix: real clients against real servers\n\n%d clients per cell, seed %d", m.Clients, m.Seed)
	if m.Reduced {
		b.WriteString(", the reduced matrix (memory-sticky, hard restart)")
	}
	b.WriteString(". Rows are clients, columns what each server did to them.\n")
	for _, f := range Faults {
		for _, d := range Designs {
			var cells []Cell
			for _, c := range m.Cells {
				if c.Fault == f && c.Design == d {
					cells = append(cells, c)
				}
			}
			if len(cells) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n## %s, %s\n\n", f, d)
			b.WriteString("| client | server | calls | done | failed | 404s | lost | resumes | first error |\n|---|---|---|---|---|---|---|---|---|\n")
			for _, c := range cells {
				client := c.Client
				if client == "native" {
					client = "native (compliant)"
				}
				e := c.FirstError
				if e == "" {
					e = "none"
				}
				sat := ""
				if c.Saturated {
					sat = " (host saturated)"
				}
				fmt.Fprintf(&b, "| %s | %s%s | %d | %d | %d | %d | %d | %d | %s |\n", client, c.Server, sat, c.Calls, c.Completed, c.FailedCalls, c.HTTP404, c.EventsLost, c.Resumes, strings.ReplaceAll(e, "|", "\\|"))
			}
		}
	}
	return b.String()
}
