package cli

import "strconv"

// targetSets are the --set overrides that `run --target URL` stands for:
// the clients aim at URL ([server] url) and no server command is started.
// Faults that need control of the processes are then refused when the
// scenario loads, naming --set server.url.
func targetSets(url string) []string {
	return []string{"server.url=" + strconv.Quote(url), `server.command=""`}
}
