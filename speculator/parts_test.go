package speculator

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// TestPartsTable checks the parts table against the package doc: which
// parts react to each phase, in table order. A reply meets the repliers,
// then either the framers (a Frames reply) or the chainers, so no part
// sees one reply twice as long as no part is both a replier and a framer
// or chainer — but the learned rules, which take every reply in twice on
// purpose: as the record of where its IDs are (replied: also while not
// speculating, and before the commands that use them are learned) and as
// the input of the replay (chain, once per reply: lstop.fed).
func TestPartsTable(t *testing.T) {
	rs := &relay.Session{}
	ss := newSession(New(Config{}, zerolog.Nop(), nil), rs)
	names := func(v reflect.Value) []string { // a phase's list: the parts' type names
		var out []string
		for i := range v.Len() {
			out = append(out, v.Index(i).Elem().Type().Elem().Name())
		}
		return out
	}
	want := map[string][]string{
		"commanders":  {"attach", "writeBehind", "prepareRule", "liveness"},
		"askers":      {"attach", "prepareRule", "valueRules", "shapeRules", "learnedRules"},
		"missers":     {"stopRules"},
		"repliers":    {"attach", "writeBehind", "prepareRule", "learnedRules"},
		"holders":     {"framePrediction"},
		"compositors": {"attach", "writeBehind", "prepareRule", "learnedRules"},
		"stoppers":    {"prepareRule", "learnedRules"},
		"wavers":      {"framePrediction", "stopRules", "learnedRules"},
		"framers":     {"framePrediction", "stopRules", "learnedRules"},
		"chainers":    {"stopRules", "valueRules", "shapeRules", "learnedRules"},
		"profilers":   {"writeBehind", "prepareRule", "shapeRules", "learnedRules"},
	}
	v := reflect.ValueOf(ss.on)
	for i := range v.NumField() {
		f := v.Type().Field(i).Name
		got := names(v.Field(i))
		if !slices.Equal(got, want[f]) {
			t.Errorf("%s: %v, want %v", f, got, want[f])
		}
	}
	replied := names(v.FieldByName("repliers"))
	for _, p := range append(names(v.FieldByName("framers")), names(v.FieldByName("chainers"))...) {
		if slices.Contains(replied, p) && p != "learnedRules" {
			t.Errorf("%s sees a reply twice (replier, and framer or chainer)", p)
		}
	}
}

// tapLog records what a Tap is told.
type tapLog struct{ got []string }

func (l *tapLog) Event(_ *relay.Outbox, st StopInfo) {
	l.got = append(l.got, fmt.Sprintf("event %d active=%v idle=%v", st.Serial, st.Active, st.Idle))
}
func (l *tapLog) Ended(_ *relay.Outbox, serial uint64) {
	l.got = append(l.got, fmt.Sprintf("ended %d", serial))
}
func (l *tapLog) Stored(*relay.Outbox, *SpecReply) { l.got = append(l.got, "stored") }
func (l *tapLog) Idle(_ *relay.Outbox, stop uint64) {
	l.got = append(l.got, fmt.Sprintf("idle %d", stop))
}

// TestTapToldStops: the tap is told where the stops stand after each
// event (stop n began when the serial grew), and when an active stop
// ends, and nothing on commands that change neither.
func TestTapToldStops(t *testing.T) {
	rs := &relay.Session{}
	rs.SetIDSizes(sizes8)
	tap := &tapLog{}
	s := New(Config{}, zerolog.Nop(), nil).NewTapped(rs, ModeNever, tap)
	ic := s.Interceptor()
	event := func(policy jdwp.SuspendPolicy, e jdwp.Event) {
		c := jdwp.Composite{SuspendPolicy: policy, Events: []jdwp.Event{e}}
		p := jdwp.AppendCommand(nil, 1000, jdwp.CmdComposite, jdwptest.AppendComposite(nil, sizes8, &c))
		ic.FromVM(rs, &relay.Frame{Kind: relay.KindEvent, Packet: p})
	}
	id := uint32(0)
	command := func(c jdwp.Cmd, b []byte) {
		id++
		ic.FromDebugger(rs, &relay.Frame{Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, id, c, b), ID: id})
	}
	event(jdwp.SuspendAll, bpEvent(thread1))
	command(jdwp.CmdThreadReferenceFrameCount, threadBody(thread1))
	command(jdwp.CmdVirtualMachineResume, nil)
	event(jdwp.SuspendNone, jdwp.Event{Kind: jdwp.EventThreadStart, Thread: 0x77})
	event(jdwp.SuspendAll, bpEvent(thread1))
	event(jdwp.SuspendAll, jdwp.Event{Kind: jdwp.EventClassPrepare, Thread: thread1, RefTypeTag: jdwp.TypeTagClass,
		TypeID: 0x90, Signature: []byte("LC;"), Status: 7})
	command(jdwp.CmdVirtualMachineResume, nil)
	command(jdwp.CmdVirtualMachineResume, nil)
	want := []string{
		"event 1 active=true idle=true",
		"ended 1",
		"event 1 active=false idle=true",
		"event 2 active=true idle=true",
		"event 3 active=true idle=true", // a suspending CLASS_PREPARE: the prepare rule's stop
		"ended 3",
	}
	if !slices.Equal(tap.got, want) {
		t.Fatalf("tap told\n%q\nwant\n%q", tap.got, want)
	}
}
