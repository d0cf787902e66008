//go:build unix

package tunnel

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the command in a process group of its own, so that
// signal reaches whatever it started too (sh -c '...' without exec).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signal sends sig (terminate, or kill when hard) to the command's
// process group.
func signal(cmd *exec.Cmd, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-cmd.Process.Pid, sig) //nolint:errcheck // it may have exited
}
