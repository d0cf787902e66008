//go:build !windows

package accept

import "syscall"

// shortages are the errors of a shortage (short).
var shortages = [...]syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED}
