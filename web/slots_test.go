package web

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/web/convo"
	"github.com/rs/zerolog"
)

// answering is an interceptor that answers ThreadReference.Name at once
// (CacheHit) and ThreadReference.Status later, from another goroutine
// (Belay, through relay.Session.Do), as the speculator's belays come from
// the VM's side.
type answering struct{}

func (answering) FromDebugger(s *relay.Session, f *relay.Frame) relay.Action {
	switch f.Cmd {
	case jdwp.CmdThreadReferenceName:
		f.Origin = relay.CacheHit
		f.Answer = jdwp.AppendReply(nil, f.ID, 0, []byte{0, 0, 0, 4, 'm', 'a', 'i', 'n'})
		return relay.Consume
	case jdwp.CmdThreadReferenceStatus:
		f.Origin = relay.Belay
		id := f.ID
		go func() {
			time.Sleep(5 * time.Millisecond)
			s.Do(func(out *relay.Outbox) { //nolint:errcheck // the session ending is fine
				out.SendToDebugger(jdwp.AppendReply(nil, id, 0, []byte{0, 0, 0, 2, 0, 0, 0, 1}), relay.Belay, jdwp.CmdThreadReferenceStatus)
			})
		}()
		return relay.Consume
	}
	return relay.Forward
}
func (answering) FromVM(*relay.Session, *relay.Frame) relay.Action { return relay.Forward }
func (answering) Close(*relay.Session)                             {}

// TestObserversPairProxyAnswers: the session tracker and the conversation
// watcher pair commands with their answers through the relay's slots, for
// VM replies and for answers the proxy gave (at once or later).
func TestObserversPairProxyAnswers(t *testing.T) {
	tr := NewSessionTracker()
	w := convo.NewWatcher(func(*relay.Session) string { return "vm" })
	dbgConn, dbgProxy := net.Pipe()
	vmProxy, vmConn := net.Pipe()
	srv := relay.NewServer(relay.Config{
		DialVM: relay.Plain(func(context.Context) (net.Conn, error) { return vmProxy, nil }),
		Logger: zerolog.Nop(),
		NewHooks: func(*relay.Session) relay.Hooks {
			return relay.Hooks{Interceptors: []relay.Interceptor{answering{}}, Observers: []relay.Observer{tr, w}}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go srv.ServeConnInfo(ctx, dbgProxy, relay.LinkInfo{}) //nolint:errcheck
	vm := jdwptest.NewVM(jdwptest.Script{
		Default: jdwptest.Body([]byte{0, 0, 0, 0}),
		Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{
			jdwp.CmdIDSizes:                  jdwptest.Body(jdwp.AppendIDSizes(nil, sizes8)),
			jdwp.CmdVirtualMachineAllThreads: jdwptest.Body([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}),
		},
		After: func(c *jdwptest.Conn, cmd jdwp.Packet) error {
			if cmd.Cmd() != jdwp.CmdVirtualMachineResume {
				return nil
			}
			comp := jdwp.Composite{SuspendPolicy: jdwp.SuspendAll, Events: []jdwp.Event{{Kind: jdwp.EventBreakpoint, Thread: 1}}}
			return c.Write(jdwp.AppendCommand(nil, 0x20000001, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &comp)))
		},
	})
	go vm.Serve(vmConn) //nolint:errcheck
	dbg, err := jdwptest.AttachConn(dbgConn)
	if err != nil {
		t.Fatal(err)
	}
	do := func(c jdwp.Cmd, body []byte, answers int) {
		t.Helper()
		if _, err := dbg.Send(c, body); err != nil {
			t.Fatal(err)
		}
		for range answers {
			if _, err := dbg.Next(); err != nil {
				t.Fatal(err)
			}
		}
	}
	thread := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	do(jdwp.CmdIDSizes, nil, 1)
	do(jdwp.CmdVirtualMachineAllThreads, nil, 1)
	do(jdwp.CmdVirtualMachineResume, nil, 2) // its reply and the stop
	do(jdwp.CmdThreadReferenceName, thread, 1)
	do(jdwp.CmdThreadReferenceStatus, thread, 1)
	do(jdwp.CmdThreadReferenceFrameCount, thread, 1)

	tr.mu.Lock()
	var cmds []StepCommand
	for _, ts := range tr.sessions {
		cmds = append(cmds, ts.cmds...)
	}
	tr.mu.Unlock()
	want := []relay.Origin{relay.CacheHit, relay.Belay, relay.Forwarded}
	if len(cmds) != len(want) {
		t.Fatalf("step commands %+v", cmds)
	}
	for i, c := range cmds {
		if c.End == 0 || c.Served != want[i] {
			t.Errorf("command %d (%v): end %v, served %v; want answered, %v", i, c.Cmd, c.End, c.Served, want[i])
		}
	}
	v, _ := w.View("vm")
	if len(v.Threads) != 1 || v.Threads[0].Name != "main" || v.Threads[0].Status != convo.StatusSleeping || v.Threads[0].FrameCount != 0 {
		t.Fatalf("view %+v", v)
	}
}
