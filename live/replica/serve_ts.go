package replica

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/stormsim/stormsim/live/tsdk"
	"github.com/stormsim/stormsim/scenario"
	"github.com/stormsim/stormsim/topology"
)

// serveTS runs a replica of the ts-sdk flavour: this process becomes
// node/server.mjs (the SDK's StreamableHTTPServerTransport, one per
// session, each with the SDK's InMemoryEventStore), so the signals the
// topology sends, SIGTERM and SIGKILL, reach the Node process itself.
func serveTS(d *scenario.Design, addr, socket, logPath string, allowHosts []string) error {
	if socket != "" {
		return &InputError{fmt.Errorf("serve: design %s has server = %q, which serves on no Unix socket: drop --socket", d.Name, topology.ServerTSSDK)}
	}
	node, script, err := tsdk.Program("server.mjs")
	if err != nil {
		return fmt.Errorf("serve: design %s has server = %q: %w", d.Name, topology.ServerTSSDK, err)
	}
	argv := []string{node, script, "--addr", addr, "--drain-ms", strconv.FormatInt(d.Replica.DrainLimit.Milliseconds(), 10)}
	if d.Mode == topology.ModeStateless {
		argv = append(argv, "--stateless")
	}
	if d.Events == topology.EventsNone {
		argv = append(argv, "--no-events")
	}
	if logPath != "" {
		argv = append(argv, "--log", logPath)
	}
	for _, h := range allowHosts {
		argv = append(argv, "--allow-host", h)
	}
	return syscall.Exec(node, argv, os.Environ())
}
