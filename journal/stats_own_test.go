package journal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestStatsCountWriteBehindApartFromDDM: on a plain HotSpot session, the
// copies of written-behind commands the proxy sends on to the VM are
// counted as what they are, not as DDM nor as speculation; the proxy's own
// DDM commands are counted as DDM.
func TestStatsCountWriteBehindApartFromDDM(t *testing.T) {
	pkt := func(view, dir, kind, served string, c jdwp.Cmd) Record {
		return Record{Type: TypePacket, Session: 1, View: view, Dir: dir, Kind: kind, Set: uint8(c.Set), Cmd: c.Cmd, Served: served}
	}
	setBP := pkt(ViewDebugger, DirToVM, KindCommand, ServedWriteBehind, jdwp.CmdEventRequestSet)
	setCopy := pkt(ViewWire, DirToVM, KindCommand, ServedSynthetic, jdwp.CmdEventRequestSet)
	resume := pkt(ViewDebugger, DirToVM, KindCommand, ServedWriteBehind, jdwp.CmdVirtualMachineResume)
	resumeCopy := pkt(ViewWire, DirToVM, KindCommand, ServedSynthetic, jdwp.CmdVirtualMachineResume)
	spec := pkt(ViewWire, DirToVM, KindCommand, ServedSynthetic, jdwp.CmdVirtualMachineVersion)
	ddm := pkt(ViewWire, DirToVM, KindCommand, ServedSynthetic, jdwp.CmdDDMChunk)

	for _, c := range []struct {
		name                        string
		recs                        []Record
		copies, ownDDM, speculative int
		text, notText               string
	}{
		{"HotSpot with write-behind", []Record{setBP, setCopy, resume, resumeCopy, spec}, 2, 0, 1,
			"written-behind commands sent on to the VM 2", "DDM commands"},
		{"Android with DDM", []Record{setBP, setCopy, ddm, ddm, ddm}, 1, 3, 0,
			"the proxy's own DDM commands 3", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := ComputeStats(c.recs)
			if st.WriteBehindCopies != c.copies || st.OwnDDM != c.ownDDM || st.Speculative != c.speculative ||
				st.Synthetic != c.copies+c.ownDDM+c.speculative {
				t.Errorf("write-behind copies %d, own DDM %d, speculative %d, synthetic %d; want %d, %d, %d and their sum",
					st.WriteBehindCopies, st.OwnDDM, st.Speculative, st.Synthetic, c.copies, c.ownDDM, c.speculative)
			}
			var b bytes.Buffer
			if err := st.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), c.text) || c.notText != "" && strings.Contains(b.String(), c.notText) {
				t.Errorf("text lacks %q or has %q:\n%s", c.text, c.notText, b.String())
			}
		})
	}
}

// TestShowLegendNamesEveryServed checks that "journal show"'s legend
// explains every value of the served column.
func TestShowLegendNamesEveryServed(t *testing.T) {
	for _, s := range []string{ServedForwarded, ServedCacheHit, ServedBelay, ServedSynthetic, ServedWriteBehind} {
		if !strings.Contains(ShowLegend, s) {
			t.Errorf("the legend does not explain %q:\n%s", s, ShowLegend)
		}
	}
}

// TestVMStartHasItsKind: VM_START comes before the IDSizes reply, when no
// event can be decoded whole; its record still names its kind.
func TestVMStartHasItsKind(t *testing.T) {
	body := []byte{2, 0, 0, 0, 1, byte(jdwp.EventVMStart), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	var w writer
	var r Record
	if _, has := w.decodeEvents(&r, body, jdwp.IDSizes{}); has {
		t.Error("a thread read without ID sizes")
	}
	if len(r.Events) != 1 || r.Events[0] != "VM_START" {
		t.Errorf("events %q, want [VM_START]", r.Events)
	}
	if line := FormatRecord(&Record{Type: TypePacket, Kind: KindEvent, Events: r.Events}, FormatOptions{}); !strings.Contains(line, "events=VM_START") {
		t.Errorf("show line %q lacks events=VM_START", line)
	}
	for _, short := range [][]byte{nil, {2, 0, 0, 0, 0, 90}, {2, 0, 0, 0, 1}} {
		var r Record
		w.decodeEvents(&r, short, jdwp.IDSizes{})
		if len(r.Events) != 0 {
			t.Errorf("body %v: events %q, want none", short, r.Events)
		}
	}
}
