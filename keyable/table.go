package keyable

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// Effect is what a command does to the VM state that cached facts depend
// on. The speculator applies it when it sees the command, before the VM
// can act on it.
type Effect uint8

const (
	// EffectUnknown: a command not in the table (an unknown set, a vendor
	// command): it may change anything.
	EffectUnknown Effect = iota
	// EffectReadOnly: changes nothing a cached fact depends on (every
	// cacheable command, and queries, event requests, HoldEvents, ...).
	EffectReadOnly
	// EffectResume: resumes the VM or a thread.
	EffectResume
	// EffectInvoke: runs threads until its reply, after which the VM
	// suspends them again as they were (InvokeMethod, NewInstance).
	EffectInvoke
	// EffectSuspendVM: VirtualMachine.Suspend.
	EffectSuspendVM
	// EffectSuspendThread: ThreadReference.Suspend of its first parameter.
	EffectSuspendThread
	// EffectRedefine: VirtualMachine.RedefineClasses: the classes listed
	// change, and any stop state with them.
	EffectRedefine
	// EffectDisposeObjects: VirtualMachine.DisposeObjects: the object IDs
	// listed may be reused for other objects.
	EffectDisposeObjects
	// EffectMutate: changes (or may change) VM state: values, frames,
	// threads, new objects, the connection itself.
	EffectMutate

	numEffects
)

var effectNames = [numEffects]string{"unknown", "read-only", "resume", "invoke", "suspend-vm",
	"suspend-thread", "redefine", "dispose-objects", "mutate"}

func (e Effect) String() string {
	if e < numEffects {
		return effectNames[e]
	}
	return "Effect(?)"
}

// Parameter layouts of cacheable commands (see field and layout).
const (
	none        layout = 0
	refType            = layout(fRefType)
	object             = layout(fObject)
	refMethod          = layout(fRefType) | layout(fMethod)<<8
	objIntInt          = layout(fObject) | layout(fInt)<<8 | layout(fInt)<<16
	objFrame           = layout(fObject) | layout(fFrame)<<8
	objFrameSl         = layout(fObject) | layout(fFrame)<<8 | layout(fSlots)<<16
	objFieldIDs        = layout(fObject) | layout(fFieldIDs)<<8
	refFieldIDs        = layout(fRefType) | layout(fFieldIDs)<<8
)

// Shorthands for the rows below.
const (
	vm      = TierVM
	class   = TierClass
	obj     = TierObject
	stop    = TierStop
	thread  = ScopeThread
	wholeVM = ScopeVM
	ro      = EffectReadOnly
	mutate  = EffectMutate
)

// table is every command of the JDWP specification (as jdwp's command
// table, which TestSpecTables checks against the JDK) and DDM.Chunk: one
// row per command, with its effect and, for a cacheable command, the
// validity tier and scope of its reply and the layout of its parameters.
// TestTableCoversSpec checks that every command of the specification has
// exactly one row and every row one command.
var table = [...]Command{
	{Cmd: jdwp.CmdVirtualMachineVersion, Info: Info{Effect: ro, Tier: vm, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineClassesBySignature, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdVirtualMachineAllClasses, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdVirtualMachineAllThreads, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineTopLevelThreadGroups, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineDispose, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdVirtualMachineIDSizes, Info: Info{Effect: ro, Tier: vm, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineSuspend, Info: Info{Effect: EffectSuspendVM}},
	{Cmd: jdwp.CmdVirtualMachineResume, Info: Info{Effect: EffectResume}},
	{Cmd: jdwp.CmdVirtualMachineExit, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdVirtualMachineCreateString, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdVirtualMachineCapabilities, Info: Info{Effect: ro, Tier: vm, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineClassPaths, Info: Info{Effect: ro, Tier: vm, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineDisposeObjects, Info: Info{Effect: EffectDisposeObjects}},
	{Cmd: jdwp.CmdVirtualMachineHoldEvents, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdVirtualMachineReleaseEvents, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdVirtualMachineCapabilitiesNew, Info: Info{Effect: ro, Tier: vm, layout: none}},
	{Cmd: jdwp.CmdVirtualMachineRedefineClasses, Info: Info{Effect: EffectRedefine}},
	{Cmd: jdwp.CmdVirtualMachineSetDefaultStratum, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdVirtualMachineAllClassesWithGeneric, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdVirtualMachineInstanceCounts, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdVirtualMachineAllModules, Info: Info{Effect: ro}},

	{Cmd: jdwp.CmdReferenceTypeSignature, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeClassLoader, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeModifiers, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeFields, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeMethods, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeGetValues, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: refFieldIDs}},
	{Cmd: jdwp.CmdReferenceTypeSourceFile, Info: Info{Effect: ro, Tier: class, AbsentOK: true, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeNestedTypes, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdReferenceTypeStatus, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdReferenceTypeInterfaces, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeClassObject, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeSourceDebugExtension, Info: Info{Effect: ro, Tier: class, AbsentOK: true, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeSignatureWithGeneric, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeFieldsWithGeneric, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeMethodsWithGeneric, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeInstances, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdReferenceTypeClassFileVersion, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeConstantPool, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdReferenceTypeModule, Info: Info{Effect: ro, Tier: class, layout: refType}},

	{Cmd: jdwp.CmdClassTypeSuperclass, Info: Info{Effect: ro, Tier: class, layout: refType}},
	{Cmd: jdwp.CmdClassTypeSetValues, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdClassTypeInvokeMethod, Info: Info{Effect: EffectInvoke}},
	{Cmd: jdwp.CmdClassTypeNewInstance, Info: Info{Effect: EffectInvoke}},

	{Cmd: jdwp.CmdArrayTypeNewInstance, Info: Info{Effect: mutate}},

	{Cmd: jdwp.CmdInterfaceTypeInvokeMethod, Info: Info{Effect: EffectInvoke}},

	{Cmd: jdwp.CmdMethodLineTable, Info: Info{Effect: ro, Tier: class, AbsentOK: true, layout: refMethod}},
	{Cmd: jdwp.CmdMethodVariableTable, Info: Info{Effect: ro, Tier: class, AbsentOK: true, layout: refMethod}},
	{Cmd: jdwp.CmdMethodBytecodes, Info: Info{Effect: ro, Tier: class, layout: refMethod}},
	{Cmd: jdwp.CmdMethodIsObsolete, Info: Info{Effect: ro, Tier: class, layout: refMethod}},
	{Cmd: jdwp.CmdMethodVariableTableWithGeneric, Info: Info{Effect: ro, Tier: class, AbsentOK: true, layout: refMethod}},

	{Cmd: jdwp.CmdObjectReferenceReferenceType, Info: Info{Effect: ro, Tier: obj, layout: object}},
	{Cmd: jdwp.CmdObjectReferenceGetValues, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: objFieldIDs}},
	{Cmd: jdwp.CmdObjectReferenceSetValues, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdObjectReferenceMonitorInfo, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: object}},
	{Cmd: jdwp.CmdObjectReferenceInvokeMethod, Info: Info{Effect: EffectInvoke}},
	{Cmd: jdwp.CmdObjectReferenceDisableCollection, Info: Info{Effect: ro}},
	// EnableCollection lets the object be collected and its ID reused.
	{Cmd: jdwp.CmdObjectReferenceEnableCollection, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdObjectReferenceIsCollected, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdObjectReferenceReferringObjects, Info: Info{Effect: ro}},

	{Cmd: jdwp.CmdStringReferenceValue, Info: Info{Effect: ro, Tier: obj, layout: object}},

	{Cmd: jdwp.CmdThreadReferenceName, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceSuspend, Info: Info{Effect: EffectSuspendThread}},
	{Cmd: jdwp.CmdThreadReferenceResume, Info: Info{Effect: EffectResume}},
	{Cmd: jdwp.CmdThreadReferenceStatus, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceThreadGroup, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceFrames, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: objIntInt}},
	{Cmd: jdwp.CmdThreadReferenceFrameCount, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceOwnedMonitors, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceCurrentContendedMonitor, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceStop, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdThreadReferenceInterrupt, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdThreadReferenceSuspendCount, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceOwnedMonitorsStackDepthInfo, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: object}},
	{Cmd: jdwp.CmdThreadReferenceForceEarlyReturn, Info: Info{Effect: mutate}},

	{Cmd: jdwp.CmdThreadGroupReferenceName, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: object}},
	{Cmd: jdwp.CmdThreadGroupReferenceParent, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: object}},
	{Cmd: jdwp.CmdThreadGroupReferenceChildren, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: object}},

	{Cmd: jdwp.CmdArrayReferenceLength, Info: Info{Effect: ro, Tier: obj, layout: object}},
	{Cmd: jdwp.CmdArrayReferenceGetValues, Info: Info{Effect: ro, Tier: stop, Scope: wholeVM, layout: objIntInt}},
	{Cmd: jdwp.CmdArrayReferenceSetValues, Info: Info{Effect: mutate}},

	{Cmd: jdwp.CmdClassLoaderReferenceVisibleClasses, Info: Info{Effect: ro}},

	{Cmd: jdwp.CmdEventRequestSet, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdEventRequestClear, Info: Info{Effect: ro}},
	{Cmd: jdwp.CmdEventRequestClearAllBreakpoints, Info: Info{Effect: ro}},

	{Cmd: jdwp.CmdStackFrameGetValues, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: objFrameSl}},
	{Cmd: jdwp.CmdStackFrameSetValues, Info: Info{Effect: mutate}},
	{Cmd: jdwp.CmdStackFrameThisObject, Info: Info{Effect: ro, Tier: stop, Scope: thread, layout: objFrame}},
	{Cmd: jdwp.CmdStackFramePopFrames, Info: Info{Effect: mutate}},

	{Cmd: jdwp.CmdClassObjectReferenceReflectedType, Info: Info{Effect: ro, Tier: obj, layout: object}},

	{Cmd: jdwp.CmdModuleReferenceName, Info: Info{Effect: ro, Tier: obj, layout: object}},
	{Cmd: jdwp.CmdModuleReferenceClassLoader, Info: Info{Effect: ro, Tier: obj, layout: object}},

	// The VM's event carrier; a debugger never sends it.
	{Cmd: jdwp.CmdEventComposite, Info: Info{Effect: mutate}},
	// Android's DDM carrier: vendor payloads, not known to be read-only.
	{Cmd: jdwp.CmdDDMChunk, Info: Info{Effect: mutate}},
}

// index is table by command. It is built once at package initialisation
// from the literal above and never written afterwards.
var index = buildIndex()

func buildIndex() map[jdwp.Cmd]Info {
	m := make(map[jdwp.Cmd]Info, len(table))
	for _, r := range table {
		m[r.Cmd] = r.Info
	}
	return m
}

// Describe returns the row of command c: its effect and, if it is
// cacheable, its tier, scope and layout. ok is false for a command not in
// the table (its Info then has EffectUnknown).
func Describe(c jdwp.Cmd) (info Info, ok bool) {
	info, ok = index[c]
	return info, ok
}
