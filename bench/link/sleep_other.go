//go:build !linux

package link

import "time"

// preciseSleep is Linux's only: elsewhere the writer yields until due.
func preciseSleep(time.Duration) bool { return false }
