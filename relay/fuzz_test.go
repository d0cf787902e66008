package relay_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
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
		p.conn.(*net.TCPConn).CloseWrite()
	case otherClean:
		p.waitAll()
		p.conn.(*net.TCPConn).CloseWrite()
	}
}

// waitAll waits until the peer received all it is due, or its stream ended.
func (p *fuzzPeer) waitAll() {
	select {
	case <-p.all:
	case <-p.done:
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
func FuzzSession(f *testing.F) {
	ver := []byte(jdwp.AppendCommand(nil, 1, cmdVersion, nil))
	f.Add(ver, []byte(jdwp.AppendReply(nil, 1, 0, []byte("v"))))
	f.Add(append(ver, 0, 0, 0, 3), []byte(jdwp.AppendCommand(nil, 5, jdwp.CmdComposite, []byte{0, 0, 0, 0, 0})))
	f.Add(ver, []byte(jdwp.AppendReply(nil, 1, 0, make([]byte, 100))))
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1}, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0x80, 0, 0})
	f.Add([]byte(jdwp.AppendReply(nil, 7, 0, nil)), []byte(jdwp.AppendCommand(nil, 7, jdwp.Cmd{Set: 64, Cmd: 1}, nil)))
	f.Fuzz(func(t *testing.T, fromDbg, fromVM []byte) {
		r := newRig(t, nil, func(c *relay.Config) { c.MaxPacketSize = fuzzMaxPacket })
		dbgConn, vmConn := r.connect()
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
	})
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
