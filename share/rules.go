package share

import (
	"encoding/binary"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// Role is what a client may do to the VM.
type Role uint8

const (
	// Controller may do everything JDWP allows, as a lone debugger does:
	// the only client whose commands suspend, resume, step, invoke, set
	// values, redefine, pop frames or set suspending event requests.
	Controller Role = iota + 1
	// Observer may only look: read-only commands, event requests with
	// suspend policy NONE (and clearing its own), DDM chunks.
	Observer
)

func (r Role) String() string {
	switch r {
	case Controller:
		return "controller"
	case Observer:
		return "observer"
	}
	return "none"
}

// Rule names a rule that refused an observer's command; "" allows it.
// Each is logged (the rule field) with the command it refused.
type Rule string

// The rules an observer's command can break.
const (
	RuleAllowed Rule = ""
	// An observer may not resume the VM or a thread: the controller's stop
	// would end under it.
	RuleResume Rule = "observer-may-not-resume"
	// An observer may not suspend the VM or a thread, nor set an event
	// request that suspends.
	RuleSuspend Rule = "observer-may-not-suspend"
	// An observer may not step, even without suspending: a VM steps each
	// thread for one request at a time, and the controller's step would
	// fail (DUPLICATE) or change under it.
	RuleStep Rule = "observer-may-not-step"
	// An observer may not invoke methods or create instances: the threads
	// run, and the controller's view changes.
	RuleInvoke Rule = "observer-may-not-invoke"
	// An observer may not redefine classes.
	RuleRedefine Rule = "observer-may-not-redefine"
	// An observer may not change VM state: values, frames, threads,
	// strides, new objects, the VM's life (everything the command table
	// marks mutate, and commands it does not know).
	RuleMutate Rule = "observer-may-not-change-state"
	// An observer may not hold the VM's events: every client would wait.
	RuleHoldEvents Rule = "observer-may-not-hold-events"
	// No client may clear another client's event request.
	RuleOthersRequest Rule = "may-not-clear-another-clients-request"
)

// deniedError is the JDWP error a refused command gets. JDI turns
// NOT_IMPLEMENTED into java.lang.UnsupportedOperationException for every
// command (JDWPException.toJDIException), which a tool reports as "not
// supported" and survives; the other candidates read as a bug
// (INTERNAL: InternalException), a wrong argument (INVALID_THREAD:
// IllegalThreadStateException) or a dead VM (VM_DEAD ends the JDI
// session).
const deniedError = jdwp.ErrorNotImplemented

// observerRule says whether an observer may send the command p (with the
// client's own pinned objects, for EnableCollection); sizes are the VM's
// ID sizes.
func observerRule(p jdwp.Packet, sizes jdwp.IDSizes, pinned func(obj uint64) bool) Rule {
	c := p.Cmd()
	switch {
	case c.Set == jdwp.SetDDM:
		return RuleAllowed // DDM monitors: ddmlib's own protocol
	case c == jdwp.CmdEventRequestSet:
		b := p.Body()
		switch {
		case len(b) >= 1 && jdwp.EventKind(b[0]) == jdwp.EventSingleStep:
			return RuleStep
		case len(b) >= 2 && jdwp.SuspendPolicy(b[1]) == jdwp.SuspendNone:
			return RuleAllowed
		}
		return RuleSuspend
	case c == jdwp.CmdVirtualMachineHoldEvents, c == jdwp.CmdVirtualMachineReleaseEvents:
		return RuleHoldEvents
	case c == jdwp.CmdObjectReferenceEnableCollection:
		if obj, ok := readID(p.Body(), 0, sizes.ObjectID); ok && pinned(obj) {
			return RuleAllowed // undoes its own DisableCollection
		}
		return RuleMutate
	case c == jdwp.CmdVirtualMachineDisposeObjects:
		return RuleAllowed // its own reference counts of the IDs it was given
	}
	info, _ := keyable.Describe(c)
	switch info.Effect {
	case keyable.EffectReadOnly:
		return RuleAllowed
	case keyable.EffectResume:
		return RuleResume
	case keyable.EffectSuspendVM, keyable.EffectSuspendThread:
		return RuleSuspend
	case keyable.EffectInvoke:
		return RuleInvoke
	case keyable.EffectRedefine:
		return RuleRedefine
	}
	return RuleMutate
}

// readID reads a big-endian ID of size n at off in b.
func readID(b []byte, off, n int) (uint64, bool) {
	if n <= 0 || n > 8 || off < 0 || len(b) < off+n {
		return 0, false
	}
	var v uint64
	for _, x := range b[off : off+n] {
		v = v<<8 | uint64(x)
	}
	return v, true
}

func readInt32(b []byte, off int) (int32, bool) {
	if off < 0 || len(b) < off+4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b[off:])), true
}
