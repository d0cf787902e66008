package ddmtap

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// seeds are one payload of each kind the monitor keeps, for FuzzChunks.
var seeds = []ddm.Payload{
	ddm.Hello{ClientVersion: 1, PID: 4242, VMIdent: "V", AppName: "app", Optional: 2, UserID: 10, ABI: "x86"},
	ddm.StringList{T: ddm.TypeFEAT, Items: []string{"a", "bc"}},
	ddm.AppName{Name: "a", Optional: 2, PackageName: "p"},
	ddm.U1{T: ddm.TypeWAIT},
	ddm.ThreadName{T: ddm.TypeTHCR, ID: 1, Name: "main"},
	ddm.ThreadName{T: ddm.TypeTHNM, ID: 1, Name: "x"},
	ddm.U4{T: ddm.TypeTHDE, V: 1},
	ddm.ThreadStatus{Threads: []ddm.ThreadStat{{ID: 1, Status: 1, TID: 4242, UTime: 10, STime: 5}}},
	ddm.ThreadStatus{Design: true, Threads: []ddm.ThreadStat{{ID: 1, Status: 1}}},
	ddm.StackTrace{ThreadID: 1, Frames: []ddm.StackFrame{{Class: "C", Method: "m", Line: -2}}},
	ddm.HeapInfo{Heaps: []ddm.HeapSummary{{HeapID: 1, TimeMs: 1, Reason: 3, MaxSize: 256, Size: 128, Allocated: 64, Objects: 10}}},
	ddm.HeapSegment{T: ddm.TypeHPSG, HeapID: 1, Unit: 8, Start: 0x12c00000, Units: 305, Runs: []byte{0x09, 0x02, 0x00, 0x01, 0x91, 0xff, 0x11, 0x2b}},
	ddm.HeapSegment{T: ddm.TypeNHSG, HeapID: 1, Unit: 8, Start: 0x40000000, Units: 2, Runs: []byte{0x39, 0x01}},
	ddm.U4{T: ddm.TypeSTAG, V: uint32(ddm.MakeType("ATCH"))},
	ddm.Fail{Code: 1, Message: "bad"},
	ddm.Inflated{Inner: ddm.U4{T: ddm.TypeTHDE, V: 1}},
}

// FuzzChunks iterates arbitrary packet bodies and applies them to a monitor.
func FuzzChunks(f *testing.F) {
	f.Add(ddm.AppendCommand(nil, 1, ddm.U1{T: ddm.TypeTHEN, V: 1}, ddm.Empty{T: ddm.TypeTHST}).Body())
	f.Add([]byte{0x48, 0x50, 0x53, 0x54, 0, 0, 0, 4, 0, 0, 0, 1, 0x48, 0x50, 0x45, 0x4e, 0, 0, 0, 4, 0, 0, 0, 1})
	for _, p := range seeds {
		f.Add(ddm.AppendPayload(nil, p))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m := NewMonitor("fuzz", nopLog, nil)
		m.HandlePayload(ddm.VMToHost, body)
		m.HandlePayload(ddm.HostToVM, body)
		_ = m.Snapshot()
	})
}
