package journal

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestStatsSpeculationUsed checks that the share of speculative commands
// used is used / sent, not round trips saved / sent: one speculative
// Version reply serves three cache hits, and a second one is never used.
func TestStatsSpeculationUsed(t *testing.T) {
	recs := readAll(t, session(t, Options{}, true, func(d *debugger) {
		d.call(jdwp.CmdIDSizes, nil)
		d.call(jdwp.CmdVirtualMachineAllThreads, nil) // speculates Version
		for range 3 {
			d.call(jdwp.CmdVirtualMachineVersion, nil) // hits
		}
		d.call(jdwp.CmdVirtualMachineAllThreads, nil) // speculates Version again, unused
		d.call(jdwp.CmdDDMChunk, []byte("HELO\x00\x00\x00\x04\x00\x00\x00\x01"))
	}))
	st := ComputeStats(recs)
	if st.RoundTripsSaved != 3 || st.Speculative != 2 || st.SpeculativeUsed != 1 {
		t.Errorf("round trips saved %d, speculative %d, used %d; want 3, 2, 1", st.RoundTripsSaved, st.Speculative, st.SpeculativeUsed)
	}
	var text bytes.Buffer
	if err := st.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "speculative commands 2, used 1 (50.0%)") || !strings.Contains(text.String(), "round trips saved 3") {
		t.Errorf("stats text lacks the speculation used (1 of 2, 50.0%%) or the round trips saved (3):\n%s", text.String())
	}
	if regexp.MustCompile(`\d{3,}\.\d%`).MatchString(text.String()) {
		t.Errorf("a share above 100%%:\n%s", text.String())
	}
}

// TestStatsSpeculationMatchesParameters checks that a cache hit credits
// the speculative command with its parameters, not one of the same kind
// for another object.
func TestStatsSpeculationMatchesParameters(t *testing.T) {
	cmd := func(id uint32, view, served string, body ...byte) Record {
		return Record{Type: TypePacket, Session: 1, View: view, Dir: DirToVM, Kind: KindCommand, ID: id,
			Set: uint8(jdwp.SetThreadReference), Cmd: 1, Served: served,
			Bytes: append(jdwp.AppendCommand(nil, id, jdwp.CmdThreadReferenceName, nil)[:jdwp.HeaderSize:jdwp.HeaderSize], body...)}
	}
	recs := []Record{
		cmd(0xA0000001, ViewWire, ServedSynthetic, 0, 0, 0, 1),
		cmd(0xA0000002, ViewWire, ServedSynthetic, 0, 0, 0, 2),
		cmd(7, ViewDebugger, ServedCacheHit, 0, 0, 0, 2),
		cmd(8, ViewDebugger, ServedCacheHit, 0, 0, 0, 2),
		cmd(9, ViewDebugger, ServedCacheHit, 0, 0, 0, 3), // from a forwarded reply the cache kept
	}
	st := ComputeStats(recs)
	if st.Speculative != 2 || st.SpeculativeUsed != 1 || st.RoundTripsSaved != 3 {
		t.Errorf("speculative %d, used %d, round trips saved %d; want 2, 1, 3", st.Speculative, st.SpeculativeUsed, st.RoundTripsSaved)
	}
}

// TestShowTimesInSeconds checks that "journal show" prints times as
// seconds since the journal's start, and no unexplained view column.
func TestShowTimesInSeconds(t *testing.T) {
	r := Record{Type: TypePacket, Session: 1, T: 12_345_678_901, View: ViewDebugger, Dir: DirToVM, Kind: KindCommand,
		ID: 3, Set: 1, Cmd: 1, Name: "VirtualMachine.Version", Len: 11, Served: ServedCacheHit}
	line := FormatRecord(&r, FormatOptions{})
	if !strings.HasPrefix(strings.TrimSpace(line), "12.345679s ") {
		t.Errorf("line %q does not start with the time in seconds, 12.345679s", line)
	}
	if strings.Contains(line, "dbg ") || strings.Contains(line, "wire ") {
		t.Errorf("line %q has a view column; served (%s) says it", line, r.Served)
	}
}

// TestShowNamesTheProxyAsSender checks that the proxy's own commands are
// not shown as the debugger's.
func TestShowNamesTheProxyAsSender(t *testing.T) {
	r := Record{Type: TypePacket, Session: 1, View: ViewWire, Dir: DirToVM, Kind: KindCommand,
		ID: 0xA0000001, Set: 1, Cmd: 1, Name: "VirtualMachine.Version", Len: 11, Served: ServedSynthetic}
	if line := FormatRecord(&r, FormatOptions{}); strings.Contains(line, "dbg") || !strings.Contains(line, "px→vm") {
		t.Errorf("line %q: want the proxy (px→vm) as the sender, not the debugger", line)
	}
}

// TestStatsPushedReplies: split mode's bundles and usage reports are
// counted as such (records from the bundle's header), not as the
// debugger's commands or speculation.
func TestStatsPushedReplies(t *testing.T) {
	bundle := jdwp.AppendCommand(nil, 1, jdwp.Cmd{Set: pushSet, Cmd: pushBundle},
		[]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0})
	recs := []Record{
		{Type: TypePacket, Session: 1, View: ViewWire, Dir: DirToDebugger, Kind: KindVMCommand, Set: pushSet, Cmd: pushBundle,
			Len: len(bundle), Bytes: bundle},
		{Type: TypePacket, Session: 1, View: ViewWire, Dir: DirToVM, Kind: KindCommand, Set: pushSet, Cmd: 2, Len: 40},
	}
	st := ComputeStats(recs)
	if st.PushBundles != 1 || st.PushedRecords != 42 || st.PushedBytes != len(bundle) || st.PushUsage != 1 ||
		st.Speculative != 0 || st.Synthetic != 0 || st.Commands != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestStatsMoments: the proxy's own Suspend and the Resume after it
// (a moment around reads of running state) are counted as a moment, not
// as speculation nor as a written-behind copy; a Resume of the proxy's own
// outside a moment is a written-behind copy.
func TestStatsMoments(t *testing.T) {
	own := func(c jdwp.Cmd) Record {
		return Record{Type: TypePacket, Session: 1, View: ViewWire, Dir: DirToVM, Kind: KindCommand, Set: uint8(c.Set), Cmd: c.Cmd, Len: 11}
	}
	recs := []Record{
		own(jdwp.CmdVirtualMachineSuspend), own(jdwp.CmdThreadReferenceName), own(jdwp.CmdVirtualMachineResume),
		own(jdwp.CmdVirtualMachineResume),
	}
	st := ComputeStats(recs)
	if st.Moments != 1 || st.Speculative != 1 || st.WriteBehindCopies != 1 || st.Synthetic != 4 {
		t.Errorf("moments %d, speculative %d, written-behind copies %d, synthetic %d; want 1, 1, 1, 4",
			st.Moments, st.Speculative, st.WriteBehindCopies, st.Synthetic)
	}
}
