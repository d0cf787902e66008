package link

import (
	"syscall"
	"time"
)

// preciseSleep sleeps d in nanosleep(2), whose kernel timer wakes within
// about 100 µs, where a Go timer may be a millisecond late. It blocks the
// goroutine's thread, which the runtime replaces meanwhile.
func preciseSleep(d time.Duration) bool {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil) //nolint:errcheck // EINTR: wakes early, the caller loops
	return true
}
