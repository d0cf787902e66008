package link

// Test support: helpers that only the tests of this package use, kept out of
// the binary.

import (
	"context"
	"net"
)

// Pipe relays between a and b through the emulated link until both
// directions have ended or ctx is cancelled, then closes both connections.
// When one side stops sending (EOF or a read error), the bytes already queued
// are still delivered, each after its delay, and then the other side's write
// half is closed (CloseWrite, or Close when the connection has no half
// close). A failed write, or ctx being cancelled, tears the session down at
// once. Pipe returns nil after a clean end, ctx.Err() after cancellation, and
// otherwise the first I/O error.
func Pipe(ctx context.Context, a, b net.Conn, cfg Config) (Stats, error) {
	return pipe(ctx, a, b, cfg, 0, nil, nil)
}
