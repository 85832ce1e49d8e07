//go:build !linux

package child

import "os/exec"

// start is cmd.Start: there is no Pdeathsig outside Linux.
func start(cmd *exec.Cmd) error { return cmd.Start() }
