//go:build !linux

package split

import (
	"syscall"
	"time"
)

// userTimeout does nothing where TCP_USER_TIMEOUT is not available; the
// heartbeat's read deadline still bounds a silent link.
func userTimeout(syscall.RawConn, time.Duration) error { return nil }
