package share_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/rs/zerolog"
)

// stepVM is a scripted VM that steps: each VirtualMachine.Resume is
// followed by a SINGLE_STEP event (suspending its thread) for the last
// step request set. It allocates nothing per command.
func stepVM(tb testing.TB) *jdwptest.VM {
	var req atomic.Uint32
	// Buffers of the VM's one connection's goroutine (the scripted VM
	// answers and runs After there).
	var ev, out, id []byte
	return jdwptest.StartVM(tb, jdwptest.Script{
		Unrecorded: true,
		Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{
			jdwp.CmdEventRequestSet: func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
				id = binary.BigEndian.AppendUint32(id[:0], req.Add(1))
				return 0, id
			},
			jdwp.CmdVirtualMachineIDSizes: jdwptest.Body(jdwp.AppendIDSizes(nil, sizes8)),
		},
		After: func(c *jdwptest.Conn, cmd jdwp.Packet) error {
			if cmd.Cmd() != jdwp.CmdVirtualMachineResume {
				return nil
			}
			w := jdwp.BodyWriter{Buf: ev[:0], Sizes: sizes8}
			w.Uint8(uint8(jdwp.SuspendEventThread))
			w.Int32(1)
			e := jdwp.Event{Kind: jdwp.EventSingleStep, RequestID: int32(req.Load()), Thread: 7, Location: jdwp.Location{TypeTag: jdwp.TypeTagClass, Class: 1, Method: 2, Index: 3}}
			e.Append(&w)
			ev = w.Buf
			out = jdwp.AppendCommand(out[:0], 1, jdwp.CmdEventComposite, ev)
			return c.Write(out)
		},
	})
}

// stepper is a client that steps with no allocation per step.
type stepper struct {
	c   net.Conn
	r   *jdwp.Reader
	id  uint32
	buf []byte
}

func newStepper(tb testing.TB, addr string) *stepper {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if err := jdwp.WriteHandshake(c); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	if err := jdwp.ReadHandshake(br); err != nil {
		tb.Fatal(err)
	}
	return &stepper{c: c, r: jdwp.NewReader(br, 0), buf: make([]byte, 0, 64)}
}

// call sends a command and reads to its reply (and, with wantEvent, to
// an event too); it returns the reply's first int.
func (s *stepper) call(tb testing.TB, cmd jdwp.Cmd, body []byte, wantEvent bool) int32 {
	s.id++
	s.buf = jdwp.AppendCommand(s.buf[:0], s.id, cmd, body)
	if _, err := s.c.Write(s.buf); err != nil {
		tb.Fatal(err)
	}
	var v int32
	for replied := false; !replied || wantEvent; {
		p, err := s.r.Next()
		if err != nil {
			tb.Fatal(err)
		}
		switch {
		case p.IsReply() && p.ID() == s.id:
			replied = true
			if len(p.Body()) >= 4 {
				v = int32(binary.BigEndian.Uint32(p.Body()))
			}
		case !p.IsReply() && p.Cmd() == jdwp.CmdEventComposite:
			wantEvent = false
		}
	}
	return v
}

// step is one step as a debugger does it: a step request, a resume, the
// step event, the request cleared.
func (s *stepper) step(tb testing.TB, set, clr []byte) {
	req := s.call(tb, jdwp.CmdEventRequestSet, set, false)
	s.call(tb, jdwp.CmdVirtualMachineResume, nil, true)
	binary.BigEndian.PutUint32(clr[1:], uint32(req))
	s.call(tb, jdwp.CmdEventRequestClear, clr, false)
}

// BenchmarkStep steps through a relay session shared by the hub, alone
// and with 3 observers attached (each with SUSPEND_NONE thread and class
// requests). The ratio of the two is the cost of sharing;
// BenchmarkStep/observers=0 reports the hub's allocations per step, which
// must be 0 (the relay's and the scripted VM's are 0 too).
//
//	go test -run '^$' -bench BenchmarkStep -benchmem ./share
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{0, 3} {
		b.Run("observers="+strconv.Itoa(n), func(b *testing.B) {
			vm := stepVM(b)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			front := share.NewFront("bench", share.Config{Logger: zerolog.Nop()})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- share.Serve(ctx, relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop()}), front, ln, nil, 0)
			}()
			b.Cleanup(func() { cancel(); <-done })
			ctl := newStepper(b, ln.Addr().String())
			ctl.call(b, jdwp.CmdVirtualMachineIDSizes, nil, false)
			for range n {
				o := newStepper(b, ln.Addr().String())
				o.call(b, jdwp.CmdEventRequestSet, setBody(jdwp.EventThreadStart, jdwp.SuspendNone), false)
				o.call(b, jdwp.CmdEventRequestSet, setBody(jdwp.EventClassPrepare, jdwp.SuspendNone), false)
			}
			set := setBody(jdwp.EventSingleStep, jdwp.SuspendEventThread)
			clr := make([]byte, 5)
			clr[0] = byte(jdwp.EventSingleStep)
			ctl.step(b, set, clr) // warm: buffers and maps grown
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ctl.step(b, set, clr)
			}
		})
	}
}
