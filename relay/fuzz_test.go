package relay_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// fuzzMaxPacket is the relay's packet limit in FuzzSession, small so that
// short inputs reach the oversized paths.
const fuzzMaxPacket = 64

// expectedStream is what the relay delivers of in, sent by the VM when
// fromVM: its whole packets in order up to the first framing error, with
// an oversized reply replaced by an INTERNAL error reply with its ID
// (delivered once its header arrived, even if its body then breaks off).
// clean says in is whole packets to its end, so the relay reads all of it
// and then waits for more.
func expectedStream(in []byte, fromVM bool) (want []byte, clean bool) {
	for len(in) >= 4 {
		n := int64(binary.BigEndian.Uint32(in))
		switch {
		case n < jdwp.HeaderSize:
			return want, false
		case n > fuzzMaxPacket:
			if !fromVM || len(in) < jdwp.HeaderSize || !jdwp.Packet(in[:jdwp.HeaderSize]).IsReply() {
				return want, false
			}
			want = jdwp.AppendReply(want, jdwp.Packet(in).ID(), jdwp.ErrorInternal, nil)
		case n <= int64(len(in)):
			want = append(want, in[:n]...)
		}
		if n > int64(len(in)) {
			return want, false
		}
		in = in[n:]
	}
	return want, len(in) == 0
}

// halfCloser is a connection that can end its write side alone (TCP and
// Unix stream sockets).
type halfCloser interface{ CloseWrite() error }

// fuzzPeer is one side of a FuzzSession session.
type fuzzPeer struct {
	conn net.Conn
	mu   sync.Mutex // guards got
	got  []byte
	// all is closed once got holds want (what the other peer's bytes
	// make the relay deliver).
	all, done chan struct{}
	err       error // the read's end; written before done is closed
}

func newFuzzPeer(c net.Conn, want int) *fuzzPeer {
	p := &fuzzPeer{conn: c, all: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		signalled := want == 0
		if signalled {
			close(p.all)
		}
		for {
			n, err := c.Read(buf)
			p.mu.Lock()
			p.got = append(p.got, buf[:n]...)
			have := len(p.got)
			p.mu.Unlock()
			if have >= want && !signalled {
				signalled = true
				close(p.all)
			}
			if err != nil {
				if err != io.EOF {
					p.err = err
				}
				c.Close()
				return
			}
		}
	}()
	return p
}

// send writes in, at once if it is clean (whole packets) and otherwise
// only after all the other peer's clean bytes arrived, so that the
// framing error in it ends the session after the relay delivered them;
// bytes that are not clean end with the end of the stream, since the
// relay can only tell a packet cut short when the stream ends (it has no
// read timeout: a peer may pause anywhere). Clean bytes end the stream
// once all the other peer's clean bytes arrived.
func (p *fuzzPeer) send(in []byte, clean, otherClean bool) {
	if !clean && otherClean {
		p.waitAll()
	}
	p.conn.Write(in)
	switch {
	case !clean:
		p.conn.(halfCloser).CloseWrite()
	case otherClean:
		p.waitAll()
		p.conn.(halfCloser).CloseWrite()
	}
}

// waitAll waits until the peer received all it is due, or its stream ended.
func (p *fuzzPeer) waitAll() {
	select {
	case <-p.all:
	case <-p.done:
	}
}

// sessionSeeds are FuzzSession's seed inputs (debugger's bytes, VM's
// bytes), which TestSessionSeedsTCP also runs over loopback TCP.
func sessionSeeds() [][2][]byte {
	ver := []byte(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	return [][2][]byte{
		{ver, []byte(jdwp.AppendReply(nil, 1, 0, []byte("v")))},
		{append(ver, 0, 0, 0, 3), []byte(jdwp.AppendCommand(nil, 5, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0}))},
		{ver, []byte(jdwp.AppendReply(nil, 1, 0, make([]byte, 100)))},
		{[]byte{0x80, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1}, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0x80, 0, 0}},
		{[]byte(jdwp.AppendReply(nil, 7, 0, nil)), []byte(jdwp.AppendCommand(nil, 7, jdwp.Cmd{Set: 64, Cmd: 1}, nil))},
	}
}

// FuzzSession feeds arbitrary bytes from both peers through a session:
// the relay must not panic or hang, and must end each peer's stream in an
// orderly way (EOF); each peer must receive the other's packets as sent
// (an oversized VM reply replaced by an INTERNAL error reply), in whole
// packets, up to the other's first framing error, which ends the session:
// nothing reordered, altered or made up. Everything is delivered when at
// most one peer sends a framing error (that peer sends after receiving
// all it is due); when both do, whichever the relay reads first ends the
// session, and the other peer's packets may be cut short.
//
// One Server serves every execution; each execution's connections are
// in-memory socket pairs (jdwptest.Pipe), never listened for or dialled,
// so thousands of executions leave no sockets in TIME_WAIT behind.
// TestSessionSeedsTCP runs the seeds over real loopback TCP.
func FuzzSession(f *testing.F) {
	for _, s := range sessionSeeds() {
		f.Add(s[0], s[1])
	}
	vms := make(chan net.Conn, 1)
	srv := relay.NewServer(relay.Config{
		DialVM: relay.Plain(func(ctx context.Context) (net.Conn, error) {
			select {
			case c := <-vms:
				return c, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
		DialRetry:        -1,
		MaxPacketSize:    fuzzMaxPacket,
		HandshakeTimeout: 5 * time.Second,
		Logger:           zerolog.Nop(),
	})
	f.Fuzz(func(t *testing.T, fromDbg, fromVM []byte) {
		dbg, dbgProxy := jdwptest.Pipe(t, "debugger")
		vmProxy, vm := jdwptest.Pipe(t, "vm")
		vms <- vmProxy
		served := make(chan struct{})
		go func() {
			defer close(served)
			srv.ServeConn(context.Background(), dbgProxy) //nolint:errcheck // the peers' view is what is checked
		}()
		if err := jdwp.WriteHandshake(dbg); err != nil {
			t.Fatal(err)
		}
		if err := jdwp.ReadHandshake(vm); err != nil {
			t.Fatalf("VM side handshake: %v", err)
		}
		if err := jdwp.WriteHandshake(vm); err != nil {
			t.Fatal(err)
		}
		if err := jdwp.ReadHandshake(dbg); err != nil {
			t.Fatalf("debugger side handshake: %v", err)
		}
		checkSession(t, dbg, vm, fromDbg, fromVM)
		select {
		case <-served:
		case <-time.After(jdwptest.Timeout):
			t.Fatal("the session did not end after both peers' streams ended")
		}
	})
}

// checkSession sends fromDbg and fromVM from each end of a session whose
// handshakes are done and checks what each peer receives (FuzzSession).
func checkSession(t *testing.T, dbgConn, vmConn net.Conn, fromDbg, fromVM []byte) {
	wantVM, dbgClean := expectedStream(fromDbg, false)
	wantDbg, vmClean := expectedStream(fromVM, true)
	dbg, vm := newFuzzPeer(dbgConn, len(wantDbg)), newFuzzPeer(vmConn, len(wantVM))
	go dbg.send(fromDbg, dbgClean, vmClean)
	go vm.send(fromVM, vmClean, dbgClean)
	<-dbg.done
	<-vm.done
	for _, c := range []struct {
		who       string
		p         *fuzzPeer
		want      []byte
		wantWhole bool
	}{
		{"VM", vm, wantVM, dbgClean || vmClean},
		{"debugger", dbg, wantDbg, dbgClean || vmClean},
	} {
		if c.p.err != nil {
			t.Errorf("%s: read %d bytes, then %v; want the relay to end the stream (EOF)", c.who, len(c.p.got), c.p.err)
		}
		if c.wantWhole && !bytes.Equal(c.p.got, c.want) {
			t.Errorf("%s got  %x\nwant %x", c.who, c.p.got, c.want)
		}
		if !packetPrefix(c.p.got, c.want) {
			t.Errorf("%s got  %x\nwant a prefix, in whole packets, of %x", c.who, c.p.got, c.want)
		}
	}
}

// packetPrefix reports whether got is want cut at a packet boundary.
func packetPrefix(got, want []byte) bool {
	if !bytes.HasPrefix(want, got) {
		return false
	}
	for off := 0; off < len(got); {
		off += int(binary.BigEndian.Uint32(want[off:]))
		if off > len(got) {
			return false
		}
	}
	return true
}
