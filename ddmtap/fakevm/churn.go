package fakevm

import (
	"context"
	"fmt"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
)

// ticker drives thread churn and periodic GCs.
func (vm *VM) ticker(ctx context.Context) {
	var churn, gc <-chan time.Time
	if vm.cfg.ChurnInterval > 0 {
		t := time.NewTicker(vm.cfg.ChurnInterval)
		defer t.Stop()
		churn = t.C
	}
	if vm.cfg.GCInterval > 0 {
		t := time.NewTicker(vm.cfg.GCInterval)
		defer t.Stop()
		gc = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-churn:
			vm.Churn()
		case <-gc:
			vm.GC()
		}
	}
}

// Churn runs one step of thread activity now: a thread is born or dies,
// and CPU times and states move on.
func (vm *VM) Churn() {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	vc := vm.conn
	notify := vc != nil && vc.notify
	maxStatus := 9 // Dalvik's internal states, 9 = suspended
	switch vm.cfg.Profile {
	case Design2007:
		maxStatus = 8 // the draft's states; suspension is a separate flag
	case ART:
		maxStatus = 4 // ART maps its states onto JDWP-like 0..4
	}
	for _, id := range vm.threadIDs() {
		t := vm.threads[id]
		t.utime += uint32(vm.rnd.IntN(5))
		t.stime += uint32(vm.rnd.IntN(3))
		t.status = uint8(1 + vm.rnd.IntN(maxStatus))
	}
	if len(vm.threads) > 1 && vm.rnd.IntN(2) == 0 {
		ids := vm.threadIDs()[1:] // main never dies
		id := ids[vm.rnd.IntN(len(ids))]
		delete(vm.threads, id)
		if notify {
			vm.chunk(vc, ddm.U4{T: ddm.TypeTHDE, V: id})
		}
		return
	}
	vm.objCount++
	t := vm.addThread(fmt.Sprintf("Worker-%d", vm.objCount), vm.rnd.IntN(2) == 0)
	if notify {
		vm.chunk(vc, ddm.ThreadName{T: ddm.TypeTHCR, ID: t.id, Name: t.name})
		if vm.cfg.Profile == ART && vm.rnd.IntN(3) == 0 {
			t.name += " (renamed)"
			vm.chunk(vc, ddm.ThreadName{T: ddm.TypeTHNM, ID: t.id, Name: t.name})
		}
	}
}
