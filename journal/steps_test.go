package journal

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// stepScript builds a journal of one session, times in ms.
type stepScript struct {
	recs []Record
	id   uint32
}

const msNs = int64(time.Millisecond)

func newStepScript() *stepScript {
	return &stepScript{recs: []Record{{Type: TypeHeader, Schema: 1}, {Type: TypeSessionStart, Session: 1, T: 0}}}
}

// cmd records a debugger command at ms and, when reply >= 0, its reply at
// reply ms; served is forwarded, cache_hit or belay.
func (s *stepScript) cmd(c jdwp.Cmd, served string, at, reply float64) uint32 {
	s.id++
	view := ViewBoth
	if served != ServedForwarded {
		view = ViewDebugger
	}
	body := []byte{byte(s.id)} // the parameters tell commands apart
	pkt := jdwp.AppendCommand(nil, s.id, c, body)
	s.recs = append(s.recs, Record{Type: TypePacket, Session: 1, T: int64(at * float64(msNs)), View: view, Dir: DirToVM, Kind: KindCommand,
		ID: s.id, Name: c.String(), Set: uint8(c.Set), Cmd: c.Cmd, Served: served, Bytes: pkt})
	if reply >= 0 {
		r := Record{Type: TypePacket, Session: 1, T: int64(reply * float64(msNs)), View: view, Dir: DirToDebugger, Kind: KindReply,
			ID: s.id, Name: c.String(), Set: uint8(c.Set), Cmd: c.Cmd, Served: served}
		if served == ServedForwarded {
			r.VMLatencyNs = int64((reply - at) * float64(msNs))
		}
		s.recs = append(s.recs, r)
	}
	return s.id
}

// spec records a speculative command for the belay that will carry id.
func (s *stepScript) spec(c jdwp.Cmd, forID uint32, at float64) {
	pkt := jdwp.AppendCommand(nil, 0xA0000000+forID, c, []byte{byte(forID)})
	s.recs = append(s.recs, Record{Type: TypePacket, Session: 1, T: int64(at * float64(msNs)), View: ViewWire, Dir: DirToVM, Kind: KindCommand,
		ID: 0xA0000000 + forID, Name: c.String(), Set: uint8(c.Set), Cmd: c.Cmd, Served: ServedSynthetic, Bytes: pkt})
}

// event records an Event.Composite with the given suspend policy.
func (s *stepScript) event(at float64, policy jdwp.SuspendPolicy, kind string) {
	pkt := jdwp.AppendCommand(nil, 9, jdwp.CmdComposite, []byte{byte(policy), 0, 0, 0, 0})
	th := Uint64(7)
	s.recs = append(s.recs, Record{Type: TypePacket, Session: 1, T: int64(at * float64(msNs)), View: ViewBoth, Dir: DirToDebugger, Kind: KindEvent,
		Name: "Event.Composite", Set: 64, Cmd: 100, Served: ServedForwarded, Events: []string{kind}, Thread: &th, Bytes: pkt})
}

func (s *stepScript) end(at float64) {
	s.recs = append(s.recs, Record{Type: TypeSessionEnd, Session: 1, T: int64(at * float64(msNs))})
}

// TestStepsCriticalPath checks the definition on hand-made steps at 10 ms
// RTT: serial commands count one each, hits none, a pipelined wave one, a
// belay on a speculation sent long before none, a belay on one sent after
// the previous wait one, and non-suspending events do not end the resume's
// trip.
func TestStepsCriticalPath(t *testing.T) {
	s := newStepScript()
	// Attach: two serial commands.
	s.cmd(jdwp.CmdVirtualMachineIDSizes, ServedForwarded, 1, 11)
	s.cmd(jdwp.CmdVirtualMachineVersion, ServedForwarded, 12, 22)
	// Step 1: resume, a non-suspending CLASS_PREPARE, then the stop.
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 30, 40)
	s.event(35, jdwp.SuspendNone, "CLASS_PREPARE")
	s.event(41, jdwp.SuspendAll, "SINGLE_STEP")
	s.cmd(jdwp.CmdVirtualMachineAllThreads, ServedForwarded, 42, 52) // 2
	s.cmd(jdwp.CmdThreadReferenceName, ServedCacheHit, 53, 53.1)     // free
	// A pipelined wave of three: one round trip.
	s.cmd(jdwp.CmdThreadReferenceStatus, ServedForwarded, 54, 64) // 3
	s.cmd(jdwp.CmdThreadReferenceStatus, ServedForwarded, 54.2, 64.3)
	s.cmd(jdwp.CmdThreadReferenceStatus, ServedForwarded, 54.4, 64.6)
	// A belay whose speculation left with AllThreads: overlapped.
	s.spec(jdwp.CmdThreadReferenceFrames, s.id+1, 42.5)
	s.cmd(jdwp.CmdThreadReferenceFrames, ServedBelay, 50, 52.6)
	// A belay whose speculation left after the previous wait: one more.
	s.spec(jdwp.CmdStackFrameGetValues, s.id+1, 65)
	s.cmd(jdwp.CmdStackFrameGetValues, ServedBelay, 66, 75) // 4
	s.cmd(jdwp.CmdEventRequestSet, ServedForwarded, 76, 86) // 5
	// Step 2: the resume, the stop, one command, then the session ends.
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 90, 100)
	s.event(100.5, jdwp.SuspendEventThread, "BREAKPOINT")
	s.cmd(jdwp.CmdThreadReferenceFrames, ServedForwarded, 101, 111)
	s.end(120)

	rep := ComputeSteps(s.recs)
	if len(rep.Sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(rep.Sessions))
	}
	ss := rep.Sessions[0]
	if ss.RTT != 10*time.Millisecond {
		t.Errorf("RTT estimate %v, want 10ms", ss.RTT)
	}
	if len(ss.Steps) != 3 {
		t.Fatalf("%d steps, want attach and 2", len(ss.Steps))
	}
	type want struct {
		rts, cmds, fwd, hit, belay int
		stop                       string
		dur                        time.Duration
		complete                   bool
		path                       []string
	}
	wants := []want{
		{2, 2, 2, 0, 0, "", 30 * time.Millisecond, true, []string{"VirtualMachine.IDSizes", "VirtualMachine.Version"}},
		{5, 9, 6, 1, 2, "SINGLE_STEP", 60 * time.Millisecond, true, []string{"VirtualMachine.Resume → SINGLE_STEP", "VirtualMachine.AllThreads",
			"ThreadReference.Status", "StackFrame.GetValues", "EventRequest.Set"}},
		{2, 2, 2, 0, 0, "BREAKPOINT", 30 * time.Millisecond, false, []string{"VirtualMachine.Resume → BREAKPOINT", "ThreadReference.Frames"}},
	}
	for i, w := range wants {
		st := ss.Steps[i]
		var names []string
		for _, l := range st.Path {
			names = append(names, l.Name)
		}
		if st.RoundTrips != w.rts || st.Commands != w.cmds || st.Forwarded != w.fwd || st.CacheHits != w.hit || st.Belays != w.belay ||
			st.Stop != w.stop || st.Duration != w.dur || st.Complete != w.complete || strings.Join(names, "|") != strings.Join(w.path, "|") {
			t.Errorf("step %d = %d RTs %v, %d cmds (%d fwd %d hit %d belay), stop %q, %v, complete %v\nwant %+v",
				i, st.RoundTrips, names, st.Commands, st.Forwarded, st.CacheHits, st.Belays, st.Stop, st.Duration, st.Complete, w)
		}
	}
	// The belay's link starts when its speculative command was sent.
	if l := ss.Steps[1].Path[3]; l.Served != ServedBelay || l.Offset != 35*time.Millisecond || l.Wait != 10*time.Millisecond {
		t.Errorf("belay link %+v, want from 65 ms (35 ms into the step) for 10 ms", l)
	}
	if got := ss.Steps[1].PathWait; (got - 51*time.Millisecond).Abs() > time.Microsecond {
		t.Errorf("path wait %v, want 11+10+10+10+10 ms", got)
	}
	if ss.Steps[1].Path[0].Served != "resume" || ss.Steps[1].Path[0].Wait != 11*time.Millisecond {
		t.Errorf("resume link %+v, want resume → stop event, 11 ms", ss.Steps[1].Path[0])
	}
	if ss.MedianRoundTrips != 3.5 {
		t.Errorf("median round trips %v, want 3.5", ss.MedianRoundTrips)
	}
	if len(ss.ByCommand) == 0 || ss.ByCommand[0].Name != "ThreadReference.Frames" && ss.ByCommand[0].Links != 1 {
		t.Errorf("by command %+v", ss.ByCommand)
	}
	// Waiting: the union of the waits of step 1: 30-41, 42-52 and
	// 42.5-52.6, 54-64.6, 65-75, 76-86: 11+10.6+10.6+10+10 = 52.2 ms.
	if got := ss.Steps[1].Waiting; (got - 52200*time.Microsecond).Abs() > time.Microsecond {
		t.Errorf("waiting %v, want 52.2ms", got)
	}

	var text, js bytes.Buffer
	if err := rep.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"VirtualMachine.Resume → SINGLE_STEP", "StackFrame.GetValues", "2*", "session ended before the next resume"} {
		if !strings.Contains(text.String(), sub) {
			t.Errorf("text lacks %q:\n%s", sub, text.String())
		}
	}
	if err := json.NewEncoder(&js).Encode(rep); err != nil {
		t.Fatal(err)
	}
	var back StepsReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Sessions) != 1 || back.Sessions[0].Steps[1].RoundTrips != 5 {
		t.Errorf("JSON does not read back (%v): %s", err, js.String())
	}
}

// TestStepsSessionNumberReused: a journal shared by two relay servers has
// two sessions numbered 1, one after the other; they stay apart.
func TestStepsSessionNumberReused(t *testing.T) {
	s := newStepScript()
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 0, 10)
	s.event(11, jdwp.SuspendAll, "BREAKPOINT")
	s.cmd(jdwp.CmdThreadReferenceFrames, ServedForwarded, 12, 22)
	s.end(30)
	s.recs = append(s.recs, Record{Type: TypeSessionStart, Session: 1, T: 5000 * msNs})
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 5001, 5011)
	s.event(5012, jdwp.SuspendAll, "BREAKPOINT")
	rep := ComputeSteps(s.recs)
	if len(rep.Sessions) != 2 {
		t.Fatalf("%d sessions, want 2", len(rep.Sessions))
	}
	if d := rep.Sessions[0].Steps[1].Duration; d != 30*time.Millisecond {
		t.Errorf("the first session's last step lasts %v, want 30ms (to its end)", d)
	}
	if st := rep.Sessions[1].Steps; len(st) != 2 || st[1].Stop != "BREAKPOINT" {
		t.Errorf("second session %+v", st)
	}
}

// TestStepsWithoutBytes: a journal written with --journal-raw-bytes -1
// keeps no bytes; events then suspend by their kinds, and belays are
// matched to speculation by command alone.
func TestStepsWithoutBytes(t *testing.T) {
	s := newStepScript()
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 0, 10)
	s.event(5, jdwp.SuspendNone, "CLASS_PREPARE")
	s.event(11, jdwp.SuspendAll, "BREAKPOINT")
	s.spec(jdwp.CmdThreadReferenceFrames, 99, 12)
	s.cmd(jdwp.CmdThreadReferenceFrames, ServedBelay, 13, 22)
	for i := range s.recs {
		s.recs[i].Bytes = nil
	}
	ss := ComputeSteps(s.recs).Sessions[0]
	if st := ss.Steps[1]; st.Stop != "BREAKPOINT" || st.RoundTrips != 2 || st.Path[1].Offset != 12*time.Millisecond {
		t.Errorf("step %+v, want the BREAKPOINT stop and 2 round trips, the belay's from 12 ms", st)
	}
}

// FuzzSteps feeds arbitrary journals to ComputeSteps: no panic, and every
// step's critical path is a chain of waits that do not overlap, no longer
// than the step's forwarded commands and belays.
func FuzzSteps(f *testing.F) {
	s := newStepScript()
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 0, 10)
	s.event(11, jdwp.SuspendAll, "BREAKPOINT")
	s.spec(jdwp.CmdThreadReferenceFrames, 3, 12)
	s.cmd(jdwp.CmdThreadReferenceFrames, ServedBelay, 13, 22)
	s.cmd(jdwp.CmdThreadReferenceName, ServedCacheHit, 23, 23)
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 24, 30)
	var seed bytes.Buffer
	for i := range s.recs {
		if s.recs[i].Type == TypeHeader {
			seed.WriteString(`{"type":"header","schema":1}` + "\n")
			continue
		}
		seed.Write(appendRecordJSON(nil, &s.recs[i]))
	}
	f.Add(seed.Bytes())
	f.Add([]byte(`{"type":"header","schema":1}` + "\n" + `{"type":"packet","session":1,"t":5,"view":"both","dir":"to_debugger","kind":"event","bytes":"AAAACwAAAAEAQGQ="}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _ := Read(bytes.NewReader(b))
		rep := ComputeSteps(recs)
		for _, ss := range rep.Sessions {
			for _, st := range ss.Steps {
				if st.RoundTrips != len(st.Path) || st.RoundTrips > st.Forwarded+st.Belays ||
					st.Commands != st.Forwarded+st.CacheHits+st.Belays || st.Duration < 0 {
					t.Fatalf("step %+v", st)
				}
				for i := 1; i < len(st.Path); i++ {
					if p := st.Path[i-1]; st.Path[i].T < p.T+int64(p.Wait) {
						t.Fatalf("links %d and %d overlap: %+v", i-1, i, st.Path)
					}
				}
			}
		}
		rep.WriteText(io.Discard, false) //nolint:errcheck // io.Discard
	})
}

// TestStepsWriteBehind: written-behind Clear and Set cost no round trip,
// even when the VM's reply to their copies comes later, and a
// written-behind resume still costs its trip to the stop event.
func TestStepsWriteBehind(t *testing.T) {
	s := newStepScript()
	s.cmd(jdwp.CmdVirtualMachineResume, ServedForwarded, 0, 10)
	s.event(15, jdwp.SuspendAll, "BREAKPOINT")
	s.cmd(jdwp.CmdEventRequestClear, ServedWriteBehind, 20, 20.1)
	s.spec(jdwp.CmdEventRequestClear, 100, 20.05) // its copy to the VM
	s.cmd(jdwp.CmdEventRequestSet, ServedWriteBehind, 20.2, 20.3)
	s.cmd(jdwp.CmdVirtualMachineResume, ServedWriteBehind, 20.4, 20.5)
	s.event(35, jdwp.SuspendAll, "SINGLE_STEP")
	s.cmd(jdwp.CmdThreadReferenceFrames, ServedForwarded, 36, 46)
	s.end(50)
	rep := ComputeSteps(s.recs)
	st := rep.Sessions[0].Steps[2]
	if st.WrittenBehind != 1 || st.Forwarded != 1 {
		t.Errorf("step 2: %d written behind, %d forwarded; want 1 (its resume) and 1", st.WrittenBehind, st.Forwarded)
	}
	if st.RoundTrips != 2 || st.Path[0].Served != "resume" || st.Path[1].Name != "ThreadReference.Frames" {
		t.Errorf("step 2's path %+v, want the resume to the stop and Frames", st.Path)
	}
	if st1 := rep.Sessions[0].Steps[1]; st1.RoundTrips != 1 || st1.WrittenBehind != 2 {
		t.Errorf("step 1: %d round trips, %d written behind; want 1 (the resume; the written-behind Clear and Set cost none) and 2", st1.RoundTrips, st1.WrittenBehind)
	}
}
