//go:build !unix

package tunnel

import (
	"os"
	"os/exec"
)

func ownGroup(*exec.Cmd) {}

// signal interrupts the command, or kills it when hard.
func signal(cmd *exec.Cmd, hard bool) {
	if hard {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		return
	}
	cmd.Process.Signal(os.Interrupt) //nolint:errcheck // not on every system: hard follows
}
