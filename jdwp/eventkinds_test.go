package jdwp

import "testing"

func TestCompositeStop(t *testing.T) {
	for _, tc := range []struct {
		kind   EventKind
		policy SuspendPolicy
		want   bool
	}{
		{EventBreakpoint, SuspendAll, true},
		{EventSingleStep, SuspendEventThread, true},
		{EventMethodEntry, SuspendAll, true},
		{EventMethodExitWithReturnValue, SuspendAll, true},
		{EventException, SuspendAll, true},
		{EventFieldModification, SuspendAll, true},
		{EventMonitorWait, SuspendEventThread, true},
		{EventMonitorContendedEntered, SuspendAll, true},
		{EventBreakpoint, SuspendNone, false},
		{EventMonitorWaited, SuspendNone, false},
		{EventThreadStart, SuspendAll, false},
		{EventClassPrepare, SuspendAll, false},
		{EventVMStart, SuspendAll, false},
		{EventVMDeath, SuspendAll, false},
	} {
		c := Composite{SuspendPolicy: tc.policy, Events: []Event{{Kind: EventThreadStart}, {Kind: tc.kind, Thread: 7}}}
		e, got := c.Stop()
		if got != tc.want || c.IsStop() != tc.want {
			t.Errorf("Stop(%v, %v) = %v", tc.kind, tc.policy, got)
		}
		if got && (e.Kind != tc.kind || e.Thread != 7) {
			t.Errorf("Stop(%v, %v) = %+v, want the second event", tc.kind, tc.policy, e)
		}
	}
}

func TestEventKindFacts(t *testing.T) {
	for k := range eventKindNames {
		// Every locatable kind is one a composite carries and suspends.
		if k.Locatable() && (!k.Suspends() || !isCompositeKind(k)) {
			t.Errorf("%v: locatable but not a suspending composite kind", k)
		}
		if k.EndsVM() != (k == EventVMDeath) {
			t.Errorf("%v: EndsVM = %v", k, k.EndsVM())
		}
		if got, ok := ParseEventKind(k.String()); !ok || got != k {
			t.Errorf("ParseEventKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	for k := range eventKindFacts {
		if !k.Known() {
			t.Errorf("table lists unknown kind %d", k)
		}
	}
	if _, ok := ParseEventKind("NO_SUCH_KIND"); ok {
		t.Error("ParseEventKind accepted an unknown name")
	}
}

func TestStartsWithVMDeath(t *testing.T) {
	death := AppendComposite(nil, sizes8, &Composite{SuspendPolicy: SuspendAll, Events: []Event{{Kind: EventVMDeath, RequestID: 1}}})
	if !StartsWithVMDeath(death) {
		t.Error("VM_DEATH composite not recognised")
	}
	bp := AppendComposite(nil, sizes8, &Composite{SuspendPolicy: SuspendAll, Events: []Event{{Kind: EventBreakpoint, Thread: 1}, {Kind: EventVMDeath}}})
	if StartsWithVMDeath(bp) {
		t.Error("composite starting with a breakpoint taken for VM_DEATH")
	}
	for n := range 6 {
		if StartsWithVMDeath(death[:n]) {
			t.Errorf("%d-byte body taken for VM_DEATH", n)
		}
	}
	if p, k, ok := CompositeHead(bp); !ok || p != SuspendAll || k != EventBreakpoint {
		t.Errorf("CompositeHead = %v %v %v", p, k, ok)
	}
	// No event: no first kind, whatever byte follows the count.
	if _, _, ok := CompositeHead([]byte{2, 0, 0, 0, 0, byte(EventVMDeath)}); ok {
		t.Error("CompositeHead read a kind from a composite of no event")
	}
}
