//go:build !unix

package jdwptest

import (
	"errors"
	"net"
)

func pipe(string) (a, b net.Conn, err error) {
	return nil, nil, errors.New("jdwptest: Pipe needs socketpair(2), which this system lacks")
}
