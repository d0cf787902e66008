package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// hotspotLike is a test VM that answers DDM with NOT_IMPLEMENTED, as
// HotSpot does, records every other byte it receives, and, once the
// debugger's first command arrives, sends its own stream.
type hotspotLike struct {
	ln       net.Listener
	received chan []byte // everything but DDM, once the connection ends
	toSend   []byte
}

func newHotspotLike(t *testing.T, toSend []byte) *hotspotLike {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	v := &hotspotLike{ln: ln, received: make(chan []byte, 1), toSend: toSend}
	go v.serve()
	return v
}

func (v *hotspotLike) serve() {
	c, err := v.ln.Accept()
	if err != nil {
		return
	}
	defer c.Close()
	if jdwp.ReadHandshake(c) != nil || jdwp.WriteHandshake(c) != nil {
		return
	}
	var got bytes.Buffer
	defer func() { v.received <- got.Bytes() }()
	r := jdwp.NewReader(c, 0)
	sent := false
	for {
		p, err := r.Next()
		if err != nil {
			return
		}
		if !p.IsReply() && p.Cmd() == jdwp.CmdDDMChunk {
			c.Write(jdwp.AppendReply(nil, p.ID(), jdwp.ErrorNotImplemented, nil))
			continue
		}
		got.Write(p)
		if !sent {
			sent = true
			go c.Write(v.toSend)
		}
	}
}

// TestPassThroughIsByteIdentical runs "jdwpaccel proxy --speculate=false"
// with its defaults otherwise (DDM probing on, the live page on) between a
// debugger and a HotSpot-like VM: each side receives exactly the bytes the
// other sent.
func TestPassThroughIsByteIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	packets := func(n int, fromVM bool) []byte {
		var b []byte
		for i := range n {
			body := make([]byte, rng.IntN(200))
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			switch {
			case fromVM && i%3 == 0:
				b = jdwp.AppendCommand(b, uint32(i), jdwp.CmdComposite, body)
			case i%4 == 3:
				b = jdwp.AppendReply(b, uint32(i), jdwp.ErrorCode(rng.IntN(120)), body)
			default:
				set := jdwp.CommandSet(1 + rng.IntN(18))
				b = jdwp.AppendCommand(b, uint32(i), jdwp.Cmd{Set: set, Cmd: uint8(1 + rng.IntN(20))}, body)
			}
		}
		return b
	}
	fromVM := packets(400, true)
	fromDbg := packets(400, false)
	vm := newHotspotLike(t, fromVM)
	addr, logs := startProxy(t, vm.ln.Addr().String(), "--speculate=false")

	dbg, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer dbg.Close()
	if err := jdwp.WriteHandshake(dbg); err != nil {
		t.Fatal(err)
	}
	if err := jdwp.ReadHandshake(dbg); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	go dbg.Write(fromDbg)
	dbg.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(fromVM))
	if _, err := io.ReadFull(dbg, got); err != nil {
		t.Fatalf("debugger read: %v\nproxy log:\n%s", err, logs)
	}
	if !bytes.Equal(got, fromVM) {
		t.Error("the debugger received other bytes than the VM sent")
	}
	// The VM's stream must not hold anything after it either.
	dbg.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _ := dbg.Read(make([]byte, 1)); n != 0 {
		t.Error("the debugger received bytes the VM never sent")
	}
	dbg.Close()
	select {
	case atVM := <-vm.received:
		if !bytes.Equal(atVM, fromDbg) {
			t.Errorf("the VM received %d bytes other than the %d the debugger sent", len(atVM), len(fromDbg))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the VM connection was not closed after the debugger left")
	}
}
