package fakevm

import (
	"errors"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// chunk sends a VM-originated DDM chunk; vm.mu must be held.
func (vm *VM) chunk(vc *vmConn, p ddm.Payload) {
	vc.nextID++
	id := 0x10000000 + vc.nextID
	if vm.cfg.Profile == ART {
		id = 0x80000000 | vc.nextID
	}
	vc.send(ddm.AppendCommand(nil, id, p))
}

var errNoHandler = errors.New("no handler")

// ddm handles a (199,1) command: the first chunk only, like every VM.
// It returns false when the VM exits (EXIT).
func (vm *VM) ddm(vc *vmConn, p jdwp.Packet) bool {
	it := ddm.NewChunks(p.Body())
	c, ok := it.Next()
	if !ok {
		vm.nullReply(vc, p.ID())
		return true
	}
	vm.mu.Lock()
	vm.stats.DDMRequests[c.Type.String()]++
	reply, err := vm.handle(vc, c)
	vm.mu.Unlock()
	switch {
	case c.Type == ddm.TypeEXIT && err == nil:
		return false
	case err != nil || reply == nil:
		vm.nullReply(vc, p.ID())
	default:
		vc.send(ddm.AppendReply(nil, p.ID(), reply))
	}
	return true
}

// handle runs a DDM request; vm.mu is held. It returns the reply chunk,
// nil for a null result, or errNoHandler.
func (vm *VM) handle(vc *vmConn, c ddm.Chunk) (ddm.Payload, error) {
	prof := vm.cfg.Profile
	switch c.Type {
	case ddm.TypeHELO:
		if vm.waiting {
			vm.chunk(vc, ddm.U1{T: ddm.TypeWAIT, V: 0})
		}
		return vm.hello(), nil
	case ddm.TypeFEAT:
		switch prof {
		case Dalvik:
			return ddm.StringList{T: ddm.TypeFEAT, Items: []string{"hprof-heap-dump-streaming", "hprof-heap-dump", "method-trace-profiling-streaming", "method-trace-profiling"}}, nil
		case ART:
			return ddm.StringList{T: ddm.TypeFEAT, Items: []string{"hprof-heap-dump-streaming", "hprof-heap-dump", "method-sample-profiling", "method-trace-profiling-streaming", "method-trace-profiling", "view-hierarchy"}}, nil
		}
		return nil, errNoHandler
	case ddm.TypeTHEN:
		if len(c.Data) < 1 {
			return nil, errNoHandler
		}
		vc.notify = c.Data[0] != 0
		if vc.notify {
			for _, id := range vm.threadIDs() {
				t := vm.threads[id]
				vm.chunk(vc, ddm.ThreadName{T: ddm.TypeTHCR, ID: t.id, Name: t.name})
			}
		}
		return nil, nil
	case ddm.TypeTHST:
		return vm.threadStatus(), nil
	case ddm.TypeSTKL:
		if len(c.Data) < 4 || prof == Design2007 {
			return nil, errNoHandler
		}
		id := uint32(c.Data[0])<<24 | uint32(c.Data[1])<<16 | uint32(c.Data[2])<<8 | uint32(c.Data[3])
		if vm.threads[id] == nil {
			return ddm.Fail{Code: 1, Message: "Stack trace unavailable"}, nil
		}
		return ddm.StackTrace{ThreadID: id, Frames: []ddm.StackFrame{
			{Class: "java.lang.Object", Method: "wait", Line: -2},
			{Class: "com.example.fake.Worker", Method: "run", File: "Worker.java", Line: 42},
		}}, nil
	case ddm.TypeHPGC:
		vm.gc(vc)
		return nil, nil
	case ddm.TypeEXIT:
		return nil, nil
	case ddm.TypeMPRQ:
		if prof == Design2007 {
			return nil, errNoHandler
		}
		return ddm.U1{T: ddm.TypeMPRQ, V: 0}, nil // no method profiling running
	}
	if prof == ART {
		return nil, errNoHandler // Android 12+: no heap, allocation or HPROF handlers
	}
	switch c.Type {
	case ddm.TypeHPIF:
		if len(c.Data) < 1 || c.Data[0] > 3 {
			return ddm.Fail{Code: 1, Message: "Unsupported HPIF what"}, nil
		}
		if c.Data[0] == 1 {
			vm.chunk(vc, vm.heapInfo(1))
		} else {
			vc.hpifWhen = c.Data[0]
		}
		return nil, nil
	case ddm.TypeHPSG, ddm.TypeNHSG:
		if len(c.Data) < 2 || c.Data[0] > 1 || c.Data[1] > 1 {
			return ddm.Fail{Code: 1, Message: "Unsupported " + c.Type.String() + " what/when"}, nil
		}
		if c.Type == ddm.TypeHPSG {
			vc.hpsgWhen, vc.hpsgWhat = c.Data[0], c.Data[1]
		} else {
			vc.nhsgWhen = c.Data[0]
		}
		return nil, nil
	}
	if prof == Design2007 {
		return nil, errNoHandler
	}
	switch c.Type {
	case ddm.TypeREAE:
		if len(c.Data) > 0 {
			vc.allocTrak = c.Data[0] != 0
		}
		return nil, nil
	case ddm.TypeREAQ:
		b := uint8(0)
		if vc.allocTrak {
			b = 1
		}
		return ddm.U1{T: ddm.TypeREAQ, V: b}, nil
	case ddm.TypeREAL:
		return ddm.Allocations{Entries: []ddm.Allocation{
			{Size: 24, TID: 1, Class: "Ljava/lang/String;", Frames: []ddm.AllocFrame{{Class: "Lcom/example/fake/Worker;", Method: "run", File: "Worker.java", Line: 42}}},
		}}, nil
	}
	return nil, errNoHandler
}

func (vm *VM) hello() ddm.Hello {
	h := ddm.Hello{ClientVersion: 1, PID: vm.cfg.PID, AppName: vm.cfg.AppName}
	switch vm.cfg.Profile {
	case Design2007:
		h.VMIdent = "Dalvik v0.9"
	case Dalvik:
		h.VMIdent = "Dalvik v1.6.0"
		h.Optional, h.ABI, h.JVMFlags = 3, "armeabi-v7a", "CheckJNI=false"
	case ART:
		h.VMIdent = "Dalvik v2.1.0"
		h.Optional, h.ABI, h.JVMFlags, h.PackageName = 5, "64-bit (arm64)", "CheckJNI=false", vm.cfg.AppName
	}
	return h
}

func (vm *VM) threadStatus() ddm.ThreadStatus {
	ts := ddm.ThreadStatus{Design: vm.cfg.Profile == Design2007}
	for _, id := range vm.threadIDs() {
		t := vm.threads[id]
		ts.Threads = append(ts.Threads, ddm.ThreadStat{ID: t.id, Status: t.status, TID: t.tid, UTime: t.utime, STime: t.stime, Daemon: t.daemon})
	}
	return ts
}
