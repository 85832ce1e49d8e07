package scenario

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/faults"
	"github.com/stormsim/stormsim/topology"
)

// OwnServer is an MCP server the user brings instead of stormsim's replicas
// ([server] as a table, in a scenario or a design). Either Command starts one
// replica per slot, which the live engine runs behind its own LB and faults
// like its own replicas, or URL names a deployment stormsim does not control:
// the clients talk to it directly and only client-side faults, or faults with
// a FaultHook, can run. The simulator ignores it and models the design.
//
// The checker cannot read such a server's production log, so its runs are
// judged from the client side alone (see report.Design.Judged).
type OwnServer struct {
	// Command starts one replica: a command line with {port} (required)
	// and {replica} placeholders, run by /bin/sh when it uses shell syntax,
	// in the scenarios file's folder, in a process group of its own.
	Command string            `toml:"command" json:"command,omitempty"`
	Env     map[string]string `toml:"env" json:"env,omitempty"`
	// Ready is an HTTP path that must answer (any status below 500) before
	// the replica joins the pool; the endpoint by default.
	Ready        string        `toml:"ready" json:"ready,omitempty"`
	ReadyTimeout time.Duration `toml:"ready_timeout" json:"ready_timeout,omitempty"`
	Endpoint     string        `toml:"endpoint" json:"endpoint,omitempty"` // the MCP path, /mcp by default
	// StopSignal is sent to the replica's process group for a graceful
	// stop (TERM by default); DrainTimeout later the group is killed.
	StopSignal   string        `toml:"stop_signal" json:"stop_signal,omitempty"`
	DrainTimeout time.Duration `toml:"drain_timeout" json:"drain_timeout,omitempty"`
	URL          string        `toml:"url" json:"url,omitempty"`
	Tool         OwnTool       `toml:"tool" json:"tool"`
	// FaultHook maps a fault kind to a command run (by /bin/sh) at each
	// of that kind's faults instead of stormsim's own action.
	FaultHook map[string]string `toml:"fault_hook" json:"fault_hook,omitempty"`
}

// OwnTool is the tool an own server's calls use. An empty Name means: find
// in tools/list a tool whose input schema has events and interval_ms.
type OwnTool struct {
	Name string `toml:"name" json:"name,omitempty"`
	// Arguments is a JSON object template with {events}, {interval_ms}
	// and {bytes} placeholders; DefaultToolArguments when empty.
	Arguments string `toml:"arguments" json:"arguments,omitempty"`
	// Progress says how the tool's progress values identify its events:
	// ProgressIncreasing (the default), ProgressIndex or ProgressOpaque.
	Progress string `toml:"progress" json:"progress,omitempty"`
}

// How an own server's progress values are read (server.tool.progress).
const (
	// ProgressIncreasing: any increasing numbers (0..N-1, 1..N of N,
	// fractional, with or without total); each distinct value of a call
	// is one event, numbered in the order the values first arrive.
	ProgressIncreasing = "increasing"
	// ProgressIndex: the value is the event's index, 1..E-1, as
	// stormsim's own tool sends it.
	ProgressIndex = "index"
	// ProgressOpaque: the values say nothing; every notification of an
	// attempt is its next event, and only a repeated event id is a
	// duplicate.
	ProgressOpaque = "opaque"
)

// ProgressModes are the values server.tool.progress may take.
var ProgressModes = []string{ProgressIncreasing, ProgressIndex, ProgressOpaque}

// HonoursEvents reports whether the tool's arguments pass the call's
// length ({events}): only then is a call's expected length known before
// its result.
func (o *OwnServer) HonoursEvents() bool {
	return o.Tool.Arguments == "" || strings.Contains(o.Tool.Arguments, "{events}")
}

// DefaultToolArguments are the arguments of the reference tool, stream.
const DefaultToolArguments = `{"events": {events}, "interval_ms": {interval_ms}, "bytes": {bytes}}`

// StopSignals are the signals stop_signal may name.
var StopSignals = []string{"TERM", "INT", "HUP", "QUIT", "USR1", "USR2", "KILL"}

// ToolArguments fills the arguments template for a call of e events.
func (o *OwnServer) ToolArguments(e, intervalMS, bytes int) json.RawMessage {
	t := o.Tool.Arguments
	if t == "" {
		t = DefaultToolArguments
	}
	r := strings.NewReplacer("{events}", itoa(e), "{interval_ms}", itoa(intervalMS), "{bytes}", itoa(bytes))
	return json.RawMessage(r.Replace(t))
}

func itoa(n int) string { return strconv.Itoa(n) }

// applyDefaults fills the defaults: endpoint /mcp, ready = endpoint, a 30 s
// ready timeout, TERM, the design's drain limit.
func (o *OwnServer) applyDefaults(drainLimit time.Duration) {
	if o.Endpoint == "" {
		o.Endpoint = "/mcp"
	}
	if o.URL == "" {
		if o.Ready == "" {
			o.Ready = o.Endpoint
		}
		if o.ReadyTimeout == 0 {
			o.ReadyTimeout = 30 * time.Second
		}
		if o.StopSignal == "" {
			o.StopSignal = "TERM"
		}
		if o.DrainTimeout == 0 {
			o.DrainTimeout = drainLimit
		}
	}
	o.StopSignal = strings.TrimPrefix(strings.ToUpper(o.StopSignal), "SIG")
	if o.Tool.Progress == "" {
		o.Tool.Progress = ProgressIncreasing
	}
}

// validate reports every problem of o, each as key: message.
func (o *OwnServer) validate() []string {
	var bad []string
	add := func(key, msg string) { bad = append(bad, key+": "+msg) }
	switch {
	case o.Command != "" && o.URL != "":
		add("url", "a server is started by command or reached at url, not both")
	case o.Command == "" && o.URL == "":
		add("command", "missing: set command (a replica stormsim starts, with {port}) or url (a server it does not control)")
	case o.Command != "" && !strings.Contains(o.Command, "{port}"):
		add("command", "has no {port} placeholder: stormsim picks each replica's port and must pass it")
	}
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("url", "\""+o.URL+"\" is not an http:// or https:// URL")
		}
	}
	if !strings.HasPrefix(o.Endpoint, "/") {
		add("endpoint", "\""+o.Endpoint+"\" must be a path starting with /")
	}
	if o.Command != "" {
		if !strings.HasPrefix(o.Ready, "/") {
			add("ready", "\""+o.Ready+"\" must be a path starting with /")
		}
		if o.ReadyTimeout <= 0 {
			add("ready_timeout", o.ReadyTimeout.String()+" must be positive")
		}
		if o.DrainTimeout < 0 {
			add("drain_timeout", o.DrainTimeout.String()+" is negative")
		}
		if !slices.Contains(StopSignals, o.StopSignal) {
			add("stop_signal", "\""+o.StopSignal+"\" is not one of "+strings.Join(StopSignals, ", "))
		}
	}
	var probe map[string]any
	if err := json.Unmarshal(o.ToolArguments(1, 1, 1), &probe); err != nil {
		add("tool.arguments", "is not a JSON object once {events}, {interval_ms} and {bytes} are filled in: "+err.Error())
	}
	if !slices.Contains(ProgressModes, o.Tool.Progress) {
		add("tool.progress", "\""+o.Tool.Progress+"\" is not one of "+strings.Join(ProgressModes, ", "))
	}
	for _, k := range sortedKeys(o.FaultHook) {
		if !slices.Contains(faults.Kinds(), k) {
			add("fault_hook."+k, "not a fault kind (valid: "+strings.Join(faults.Kinds(), ", ")+")")
		} else if strings.TrimSpace(o.FaultHook[k]) == "" {
			add("fault_hook."+k, "is empty")
		}
	}
	return bad
}

// refused lists the faults of fs that o cannot undergo: at a URL, every
// fault that needs control of the processes, stormsim's LB or its Redis;
// run by command, the store faults (the server keeps its own store). A
// fault_hook for the kind makes it possible.
func (o *OwnServer) refused(fs []faults.Fault, ctx faults.Context) []string {
	var bad []string
	for i, f := range fs {
		k := f.Kind()
		if faults.ClientsOnly(f, ctx) || o.FaultHook[k] != "" {
			continue
		}
		hook := " drop the fault, or set server.fault_hook." + k + " to a command that carries it out (for example kubectl rollout restart deploy/mcp)"
		switch {
		case o.URL != "":
			bad = append(bad, "faults["+itoa(i)+"] (kind \""+k+"\") needs control of the server's processes, stormsim's load balancer or its Redis, "+
				"which a server stormsim reaches at a URL does not give:"+hook)
		case faults.TouchesStore(f, ctx):
			bad = append(bad, "faults["+itoa(i)+"] (kind \""+k+"\") needs the Redis stormsim starts, and a server you bring keeps its own store:"+hook)
		}
	}
	return bad
}

// designLayer is the design's own block as a layer, when the file has one.
func (ld *loader) designLayer(name string) []*layer {
	p, ok := ld.raw.Design[name]
	if !ok {
		return nil
	}
	return []*layer{{md: &ld.md, prim: p, path: []string{"design", name}, where: ld.file + ": design." + name}}
}

// ownServer resolves the design's server key: a built-in flavour (a
// string, in the design's block only) or a server the user brings (a
// table, in any layer; the layers' keys merge, later wins).
func (ld *loader) ownServer(d *Design, dt designTop, dl *layer, layers []*layer, sub []subs) {
	var own *OwnServer
	var srcs []*layer
	for i, l := range layers {
		if !l.defined("server") {
			continue
		}
		switch typ := l.md.Type(append(slices.Clone(l.path), "server")...); typ {
		case "Hash", "": // "": a table made implicitly by dotted keys (server.url = ...)
			if own == nil {
				own = &OwnServer{}
			}
			ld.decode(l, sub[i].Server, own)
			srcs = append(srcs, l)
		default:
			ld.errorf(origin(layers[:i+1], "server"), "want a table of the server you bring ([%s.server] with command or url), got %s; "+
				"a built-in flavour (%s) is a design's key: [design.NAME] server = \"go-sdk\"",
				strings.Join(l.path, "."), strings.ToLower(typ), strings.Join(topology.Servers, ", "))
		}
	}
	if dl != nil && dl.defined("server") {
		where := dl.where + ".server"
		switch typ := dl.md.Type(append(slices.Clone(dl.path), "server")...); typ {
		case "String":
			var flavour string
			ld.decode(dl, dt.Server, &flavour)
			if own != nil {
				ld.errorf(where, "%q is a built-in server, but %s brings its own ([server] table): use one or the other", flavour, srcs[len(srcs)-1].where)
			}
			d.Server = flavour
		case "Hash", "":
			if own == nil {
				own = &OwnServer{}
			}
			ld.decode(dl, dt.Server, own)
			srcs = append(srcs, dl)
		default:
			ld.errorf(where, "want a built-in server (%s) or a table of the server you bring ([design.%s.server] with command or url), got %s",
				strings.Join(topology.Servers, ", "), d.Name, strings.ToLower(typ))
		}
	}
	if own != nil && dl != nil && dl.defined("server") {
		// --set server.* (and run --target, which stands for it) wins over
		// a design's own [server] table too: it is what the user asked for
		// on this run.
		for i, l := range layers {
			if l.where == "--set" && l.defined("server") {
				ld.decode(l, sub[i].Server, own)
				srcs = append(srcs, l)
			}
		}
	}
	if own == nil {
		return
	}
	own.applyDefaults(d.Replica.DrainLimit)
	where := srcs[len(srcs)-1].where + ".server"
	if srcs[len(srcs)-1].where == "--set" {
		where = "--set server"
	}
	for _, e := range own.validate() {
		ld.errorf(where+"."+strings.SplitN(e, ": ", 2)[0], "%s", strings.SplitN(e, ": ", 2)[1])
	}
	d.Own = own
}
