package relay

import (
	"context"
	"net"
)

// ServeConn runs one session for an accepted debugger connection, as
// Serve does for each, until it ends, and returns the error that ended it
// (nil for an orderly close).
func (srv *Server) ServeConn(ctx context.Context, debugger net.Conn) error {
	return srv.ServeConnInfo(ctx, debugger, LinkInfo{})
}
