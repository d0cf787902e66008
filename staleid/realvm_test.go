package staleid

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// candidates are the command sets whose commands take an object or
// reference type ID first.
var candidateSets = [...]struct {
	set jdwp.CommandSet
	n   uint8
}{
	{jdwp.SetReferenceType, 19}, {jdwp.SetClassType, 4}, {jdwp.SetArrayType, 1},
	{jdwp.SetInterfaceType, 1}, {jdwp.SetMethod, 5}, {jdwp.SetObjectReference, 10},
	{jdwp.SetStringReference, 1}, {jdwp.SetThreadReference, 14},
	{jdwp.SetThreadGroupReference, 3}, {jdwp.SetArrayReference, 3},
	{jdwp.SetClassLoaderReference, 1}, {jdwp.SetStackFrame, 4},
	{jdwp.SetClassObjectReference, 1}, {jdwp.SetModuleReference, 2},
}

// neverSent is an ID a fresh connection was never sent: HotSpot numbers
// the IDs it hands out from 1 at each attach.
const neverSent = 0x7fff_0000_0000_0001

// vmAnswers asks a real VM, directly, each candidate command with an ID
// it never sent, alone and followed by zeros, and returns the VM's
// answer per command where both agree.
func vmAnswers(t *testing.T) map[jdwp.Cmd]answer {
	b := jdwptest.JavaBuild(t)
	vm := jdwptest.StartJava(t, b, javavm.Deep)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := vm.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := jdwptest.AttachConn(c)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	sizes := idSizes(t, d)
	got := map[jdwp.Cmd]answer{}
	for _, cs := range candidateSets {
		for n := uint8(1); n <= cs.n; n++ {
			cmd := jdwp.Cmd{Set: cs.set, Cmd: n}
			if cs.set == jdwp.SetObjectReference && n == 4 {
				continue // no such command
			}
			size := sizes.ObjectID
			if isTypeSet(cs.set) {
				size = sizes.ReferenceTypeID
			}
			alone := binary.BigEndian.AppendUint64(nil, neverSent)[8-size:]
			padded := append(append([]byte(nil), alone...), make([]byte, 64)...)
			var answers [2]answer
			for i, body := range [][]byte{alone, padded} {
				r, err := d.Call(cmd, body)
				if err != nil {
					t.Fatalf("%v: %v", cmd, err)
				}
				answers[i] = answer{r.ErrorCode(), slices.Clone(r.Body())}
			}
			if !sameAnswer(answers[0], answers[1]) {
				t.Logf("%v: %v alone, %v followed by zeros: not checked", cmd, answers[0], answers[1])
				continue
			}
			got[cmd] = answers[0]
		}
	}
	return got
}

func sameAnswer(a, b answer) bool { return a.code == b.code && bytes.Equal(a.body, b.body) }

func isTypeSet(s jdwp.CommandSet) bool {
	switch s {
	case jdwp.SetReferenceType, jdwp.SetClassType, jdwp.SetArrayType, jdwp.SetInterfaceType, jdwp.SetMethod:
		return true
	}
	return false
}

func idSizes(t *testing.T, d *jdwptest.Debugger) jdwp.IDSizes {
	r, err := d.Call(jdwp.CmdVirtualMachineIDSizes, nil)
	if err != nil || r.ErrorCode() != jdwp.ErrorNone {
		t.Fatalf("IDSizes: %v %v", r, err)
	}
	br := jdwp.NewBodyReader(r.Body(), jdwp.IDSizes{})
	return jdwp.IDSizes{FieldID: int(br.Int32()), MethodID: int(br.Int32()), ObjectID: int(br.Int32()),
		ReferenceTypeID: int(br.Int32()), FrameID: int(br.Int32())}
}

// TestAnswersOfRealVM establishes answerFor against a real HotSpot: each
// command the VM answers the same for a never-sent ID whatever follows
// it is in the table with that answer (error code, or reply body), and
// the table holds nothing else.
func TestAnswersOfRealVM(t *testing.T) {
	got := vmAnswers(t)
	for cmd, a := range got {
		want, ok := answerFor[cmd]
		if !ok || !sameAnswer(a, want) {
			t.Errorf("%v: the VM answers %v, the table says %v (listed %v)", cmd, a, want, ok)
		}
	}
	for cmd := range answerFor {
		if _, ok := got[cmd]; !ok {
			t.Errorf("%v is in the table but was not established", cmd)
		}
	}
}
