package adbdevice

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"github.com/rs/zerolog"
)

// FuzzReadMessage: any bytes either fail to parse or parse into a
// message that encodes back to the same bytes.
func FuzzReadMessage(f *testing.F) {
	f.Add(AppendMessage(nil, Message{Command: CmdCNXN, Arg0: VersionSkipChecksum, Arg1: 4096, Data: []byte("host::features=shell_v2")}))
	f.Add(AppendMessage(nil, Message{Command: CmdOPEN, Arg0: 1, Data: []byte("jdwp:4001\x00")}))
	f.Add(AppendMessage(nil, Message{Command: CmdCLSE, Arg0: 0, Arg1: 1}))
	f.Add([]byte("CNXN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadMessage(bytes.NewReader(b), 64<<10, true)
		if err != nil {
			return
		}
		n := HeaderSize + len(m.Data)
		if got := AppendMessage(nil, m); !bytes.Equal(got, b[:n]) {
			t.Fatalf("re-encoded %x, read from %x", got, b[:n])
		}
	})
}

// FuzzDeviceTransport feeds arbitrary bytes to a device as if from an adb
// server: the device must neither panic nor hang, and must end the
// connection when the bytes end.
func FuzzDeviceTransport(f *testing.F) {
	cnxn := AppendMessage(nil, Message{Command: CmdCNXN, Arg0: VersionMin, Arg1: 4096})
	f.Add(cnxn)
	seq := AppendMessage(append([]byte{}, cnxn...), Message{Command: CmdOPEN, Arg0: 1, Data: []byte("shell:getprop\x00")})
	seq = AppendMessage(seq, Message{Command: CmdOKAY, Arg0: 1, Arg1: 1})
	seq = AppendMessage(seq, Message{Command: CmdWRTE, Arg0: 1, Arg1: 1, Data: []byte("x")})
	seq = AppendMessage(seq, Message{Command: CmdCLSE, Arg0: 1, Arg1: 1})
	f.Add(seq)
	f.Add(AppendMessage(append([]byte{}, cnxn...), Message{Command: CmdOPEN, Arg0: 2, Data: []byte("track-jdwp")}))
	d := New(Config{Processes: []Process{{PID: 1, Name: "p", Addr: "127.0.0.1:1"}}, Logger: zerolog.Nop(),
		Dial: func(context.Context, string) (net.Conn, error) { return nil, io.ErrClosedPipe }})
	f.Fuzz(func(t *testing.T, b []byte) {
		srv, cli := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.ServeConn(context.Background(), srv) //nolint:errcheck // any outcome but a panic or a hang
		}()
		go io.Copy(io.Discard, cli) //nolint:errcheck
		cli.Write(b)                //nolint:errcheck
		cli.Close()
		<-done
	})
}
