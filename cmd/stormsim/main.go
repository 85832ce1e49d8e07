// Command stormsim simulates and load-tests reconnect storms on MCP
// Streamable HTTP servers. Run 'stormsim --help' for its commands.
package main

import (
	"os"

	"github.com/stormsim/stormsim/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
