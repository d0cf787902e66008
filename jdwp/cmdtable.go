package jdwp

// This file is the command and error tables of the Java 17 JDWP
// specification (plus DDM.Chunk, 199/1, the Android carrier). The numbers
// are checked against the JDK's own generated com.sun.tools.jdi.JDWP by
// TestSpecTables.

// Every command of the Java 17 JDWP specification, and the DDM carrier.
// Each is named Cmd<Set><Command> after the specification's "Set.Command".
var (
	CmdVirtualMachineVersion               = Cmd{SetVirtualMachine, 1}
	CmdVirtualMachineClassesBySignature    = Cmd{SetVirtualMachine, 2}
	CmdVirtualMachineAllClasses            = Cmd{SetVirtualMachine, 3}
	CmdVirtualMachineAllThreads            = Cmd{SetVirtualMachine, 4}
	CmdVirtualMachineTopLevelThreadGroups  = Cmd{SetVirtualMachine, 5}
	CmdVirtualMachineDispose               = Cmd{SetVirtualMachine, 6}
	CmdVirtualMachineIDSizes               = CmdIDSizes
	CmdVirtualMachineSuspend               = Cmd{SetVirtualMachine, 8}
	CmdVirtualMachineResume                = Cmd{SetVirtualMachine, 9}
	CmdVirtualMachineExit                  = Cmd{SetVirtualMachine, 10}
	CmdVirtualMachineCreateString          = Cmd{SetVirtualMachine, 11}
	CmdVirtualMachineCapabilities          = Cmd{SetVirtualMachine, 12}
	CmdVirtualMachineClassPaths            = Cmd{SetVirtualMachine, 13}
	CmdVirtualMachineDisposeObjects        = Cmd{SetVirtualMachine, 14}
	CmdVirtualMachineHoldEvents            = Cmd{SetVirtualMachine, 15}
	CmdVirtualMachineReleaseEvents         = Cmd{SetVirtualMachine, 16}
	CmdVirtualMachineCapabilitiesNew       = Cmd{SetVirtualMachine, 17}
	CmdVirtualMachineRedefineClasses       = Cmd{SetVirtualMachine, 18}
	CmdVirtualMachineSetDefaultStratum     = Cmd{SetVirtualMachine, 19}
	CmdVirtualMachineAllClassesWithGeneric = Cmd{SetVirtualMachine, 20}
	CmdVirtualMachineInstanceCounts        = Cmd{SetVirtualMachine, 21}
	CmdVirtualMachineAllModules            = Cmd{SetVirtualMachine, 22}

	CmdReferenceTypeSignature            = Cmd{SetReferenceType, 1}
	CmdReferenceTypeClassLoader          = Cmd{SetReferenceType, 2}
	CmdReferenceTypeModifiers            = Cmd{SetReferenceType, 3}
	CmdReferenceTypeFields               = Cmd{SetReferenceType, 4}
	CmdReferenceTypeMethods              = Cmd{SetReferenceType, 5}
	CmdReferenceTypeGetValues            = Cmd{SetReferenceType, 6}
	CmdReferenceTypeSourceFile           = Cmd{SetReferenceType, 7}
	CmdReferenceTypeNestedTypes          = Cmd{SetReferenceType, 8}
	CmdReferenceTypeStatus               = Cmd{SetReferenceType, 9}
	CmdReferenceTypeInterfaces           = Cmd{SetReferenceType, 10}
	CmdReferenceTypeClassObject          = Cmd{SetReferenceType, 11}
	CmdReferenceTypeSourceDebugExtension = Cmd{SetReferenceType, 12}
	CmdReferenceTypeSignatureWithGeneric = Cmd{SetReferenceType, 13}
	CmdReferenceTypeFieldsWithGeneric    = Cmd{SetReferenceType, 14}
	CmdReferenceTypeMethodsWithGeneric   = Cmd{SetReferenceType, 15}
	CmdReferenceTypeInstances            = Cmd{SetReferenceType, 16}
	CmdReferenceTypeClassFileVersion     = Cmd{SetReferenceType, 17}
	CmdReferenceTypeConstantPool         = Cmd{SetReferenceType, 18}
	CmdReferenceTypeModule               = Cmd{SetReferenceType, 19}

	CmdClassTypeSuperclass   = Cmd{SetClassType, 1}
	CmdClassTypeSetValues    = Cmd{SetClassType, 2}
	CmdClassTypeInvokeMethod = Cmd{SetClassType, 3}
	CmdClassTypeNewInstance  = Cmd{SetClassType, 4}

	CmdArrayTypeNewInstance = Cmd{SetArrayType, 1}

	CmdInterfaceTypeInvokeMethod = Cmd{SetInterfaceType, 1}

	CmdMethodLineTable                = Cmd{SetMethod, 1}
	CmdMethodVariableTable            = Cmd{SetMethod, 2}
	CmdMethodBytecodes                = Cmd{SetMethod, 3}
	CmdMethodIsObsolete               = Cmd{SetMethod, 4}
	CmdMethodVariableTableWithGeneric = Cmd{SetMethod, 5}

	CmdObjectReferenceReferenceType     = Cmd{SetObjectReference, 1}
	CmdObjectReferenceGetValues         = Cmd{SetObjectReference, 2}
	CmdObjectReferenceSetValues         = Cmd{SetObjectReference, 3}
	CmdObjectReferenceMonitorInfo       = Cmd{SetObjectReference, 5}
	CmdObjectReferenceInvokeMethod      = Cmd{SetObjectReference, 6}
	CmdObjectReferenceDisableCollection = Cmd{SetObjectReference, 7}
	CmdObjectReferenceEnableCollection  = Cmd{SetObjectReference, 8}
	CmdObjectReferenceIsCollected       = Cmd{SetObjectReference, 9}
	CmdObjectReferenceReferringObjects  = Cmd{SetObjectReference, 10}

	CmdStringReferenceValue = Cmd{SetStringReference, 1}

	CmdThreadReferenceName                        = Cmd{SetThreadReference, 1}
	CmdThreadReferenceSuspend                     = Cmd{SetThreadReference, 2}
	CmdThreadReferenceResume                      = Cmd{SetThreadReference, 3}
	CmdThreadReferenceStatus                      = Cmd{SetThreadReference, 4}
	CmdThreadReferenceThreadGroup                 = Cmd{SetThreadReference, 5}
	CmdThreadReferenceFrames                      = Cmd{SetThreadReference, 6}
	CmdThreadReferenceFrameCount                  = Cmd{SetThreadReference, 7}
	CmdThreadReferenceOwnedMonitors               = Cmd{SetThreadReference, 8}
	CmdThreadReferenceCurrentContendedMonitor     = Cmd{SetThreadReference, 9}
	CmdThreadReferenceStop                        = Cmd{SetThreadReference, 10}
	CmdThreadReferenceInterrupt                   = Cmd{SetThreadReference, 11}
	CmdThreadReferenceSuspendCount                = Cmd{SetThreadReference, 12}
	CmdThreadReferenceOwnedMonitorsStackDepthInfo = Cmd{SetThreadReference, 13}
	CmdThreadReferenceForceEarlyReturn            = Cmd{SetThreadReference, 14}

	CmdThreadGroupReferenceName     = Cmd{SetThreadGroupReference, 1}
	CmdThreadGroupReferenceParent   = Cmd{SetThreadGroupReference, 2}
	CmdThreadGroupReferenceChildren = Cmd{SetThreadGroupReference, 3}

	CmdArrayReferenceLength    = Cmd{SetArrayReference, 1}
	CmdArrayReferenceGetValues = Cmd{SetArrayReference, 2}
	CmdArrayReferenceSetValues = Cmd{SetArrayReference, 3}

	CmdClassLoaderReferenceVisibleClasses = Cmd{SetClassLoaderReference, 1}

	CmdEventRequestSet                 = Cmd{SetEventRequest, 1}
	CmdEventRequestClear               = Cmd{SetEventRequest, 2}
	CmdEventRequestClearAllBreakpoints = Cmd{SetEventRequest, 3}

	CmdStackFrameGetValues  = Cmd{SetStackFrame, 1}
	CmdStackFrameSetValues  = Cmd{SetStackFrame, 2}
	CmdStackFrameThisObject = Cmd{SetStackFrame, 3}
	CmdStackFramePopFrames  = Cmd{SetStackFrame, 4}

	CmdClassObjectReferenceReflectedType = Cmd{SetClassObjectReference, 1}

	CmdModuleReferenceName        = Cmd{SetModuleReference, 1}
	CmdModuleReferenceClassLoader = Cmd{SetModuleReference, 2}

	CmdEventComposite = CmdComposite
)

// commandTable names every command; it is the single list the name lookup
// and the tests (AllCommands, the specification test) use.
var commandTable = []struct {
	cmd  Cmd
	name string
}{
	{CmdVirtualMachineVersion, "VirtualMachine.Version"},
	{CmdVirtualMachineClassesBySignature, "VirtualMachine.ClassesBySignature"},
	{CmdVirtualMachineAllClasses, "VirtualMachine.AllClasses"},
	{CmdVirtualMachineAllThreads, "VirtualMachine.AllThreads"},
	{CmdVirtualMachineTopLevelThreadGroups, "VirtualMachine.TopLevelThreadGroups"},
	{CmdVirtualMachineDispose, "VirtualMachine.Dispose"},
	{CmdVirtualMachineIDSizes, "VirtualMachine.IDSizes"},
	{CmdVirtualMachineSuspend, "VirtualMachine.Suspend"},
	{CmdVirtualMachineResume, "VirtualMachine.Resume"},
	{CmdVirtualMachineExit, "VirtualMachine.Exit"},
	{CmdVirtualMachineCreateString, "VirtualMachine.CreateString"},
	{CmdVirtualMachineCapabilities, "VirtualMachine.Capabilities"},
	{CmdVirtualMachineClassPaths, "VirtualMachine.ClassPaths"},
	{CmdVirtualMachineDisposeObjects, "VirtualMachine.DisposeObjects"},
	{CmdVirtualMachineHoldEvents, "VirtualMachine.HoldEvents"},
	{CmdVirtualMachineReleaseEvents, "VirtualMachine.ReleaseEvents"},
	{CmdVirtualMachineCapabilitiesNew, "VirtualMachine.CapabilitiesNew"},
	{CmdVirtualMachineRedefineClasses, "VirtualMachine.RedefineClasses"},
	{CmdVirtualMachineSetDefaultStratum, "VirtualMachine.SetDefaultStratum"},
	{CmdVirtualMachineAllClassesWithGeneric, "VirtualMachine.AllClassesWithGeneric"},
	{CmdVirtualMachineInstanceCounts, "VirtualMachine.InstanceCounts"},
	{CmdVirtualMachineAllModules, "VirtualMachine.AllModules"},
	{CmdReferenceTypeSignature, "ReferenceType.Signature"},
	{CmdReferenceTypeClassLoader, "ReferenceType.ClassLoader"},
	{CmdReferenceTypeModifiers, "ReferenceType.Modifiers"},
	{CmdReferenceTypeFields, "ReferenceType.Fields"},
	{CmdReferenceTypeMethods, "ReferenceType.Methods"},
	{CmdReferenceTypeGetValues, "ReferenceType.GetValues"},
	{CmdReferenceTypeSourceFile, "ReferenceType.SourceFile"},
	{CmdReferenceTypeNestedTypes, "ReferenceType.NestedTypes"},
	{CmdReferenceTypeStatus, "ReferenceType.Status"},
	{CmdReferenceTypeInterfaces, "ReferenceType.Interfaces"},
	{CmdReferenceTypeClassObject, "ReferenceType.ClassObject"},
	{CmdReferenceTypeSourceDebugExtension, "ReferenceType.SourceDebugExtension"},
	{CmdReferenceTypeSignatureWithGeneric, "ReferenceType.SignatureWithGeneric"},
	{CmdReferenceTypeFieldsWithGeneric, "ReferenceType.FieldsWithGeneric"},
	{CmdReferenceTypeMethodsWithGeneric, "ReferenceType.MethodsWithGeneric"},
	{CmdReferenceTypeInstances, "ReferenceType.Instances"},
	{CmdReferenceTypeClassFileVersion, "ReferenceType.ClassFileVersion"},
	{CmdReferenceTypeConstantPool, "ReferenceType.ConstantPool"},
	{CmdReferenceTypeModule, "ReferenceType.Module"},
	{CmdClassTypeSuperclass, "ClassType.Superclass"},
	{CmdClassTypeSetValues, "ClassType.SetValues"},
	{CmdClassTypeInvokeMethod, "ClassType.InvokeMethod"},
	{CmdClassTypeNewInstance, "ClassType.NewInstance"},
	{CmdArrayTypeNewInstance, "ArrayType.NewInstance"},
	{CmdInterfaceTypeInvokeMethod, "InterfaceType.InvokeMethod"},
	{CmdMethodLineTable, "Method.LineTable"},
	{CmdMethodVariableTable, "Method.VariableTable"},
	{CmdMethodBytecodes, "Method.Bytecodes"},
	{CmdMethodIsObsolete, "Method.IsObsolete"},
	{CmdMethodVariableTableWithGeneric, "Method.VariableTableWithGeneric"},
	{CmdObjectReferenceReferenceType, "ObjectReference.ReferenceType"},
	{CmdObjectReferenceGetValues, "ObjectReference.GetValues"},
	{CmdObjectReferenceSetValues, "ObjectReference.SetValues"},
	{CmdObjectReferenceMonitorInfo, "ObjectReference.MonitorInfo"},
	{CmdObjectReferenceInvokeMethod, "ObjectReference.InvokeMethod"},
	{CmdObjectReferenceDisableCollection, "ObjectReference.DisableCollection"},
	{CmdObjectReferenceEnableCollection, "ObjectReference.EnableCollection"},
	{CmdObjectReferenceIsCollected, "ObjectReference.IsCollected"},
	{CmdObjectReferenceReferringObjects, "ObjectReference.ReferringObjects"},
	{CmdStringReferenceValue, "StringReference.Value"},
	{CmdThreadReferenceName, "ThreadReference.Name"},
	{CmdThreadReferenceSuspend, "ThreadReference.Suspend"},
	{CmdThreadReferenceResume, "ThreadReference.Resume"},
	{CmdThreadReferenceStatus, "ThreadReference.Status"},
	{CmdThreadReferenceThreadGroup, "ThreadReference.ThreadGroup"},
	{CmdThreadReferenceFrames, "ThreadReference.Frames"},
	{CmdThreadReferenceFrameCount, "ThreadReference.FrameCount"},
	{CmdThreadReferenceOwnedMonitors, "ThreadReference.OwnedMonitors"},
	{CmdThreadReferenceCurrentContendedMonitor, "ThreadReference.CurrentContendedMonitor"},
	{CmdThreadReferenceStop, "ThreadReference.Stop"},
	{CmdThreadReferenceInterrupt, "ThreadReference.Interrupt"},
	{CmdThreadReferenceSuspendCount, "ThreadReference.SuspendCount"},
	{CmdThreadReferenceOwnedMonitorsStackDepthInfo, "ThreadReference.OwnedMonitorsStackDepthInfo"},
	{CmdThreadReferenceForceEarlyReturn, "ThreadReference.ForceEarlyReturn"},
	{CmdThreadGroupReferenceName, "ThreadGroupReference.Name"},
	{CmdThreadGroupReferenceParent, "ThreadGroupReference.Parent"},
	{CmdThreadGroupReferenceChildren, "ThreadGroupReference.Children"},
	{CmdArrayReferenceLength, "ArrayReference.Length"},
	{CmdArrayReferenceGetValues, "ArrayReference.GetValues"},
	{CmdArrayReferenceSetValues, "ArrayReference.SetValues"},
	{CmdClassLoaderReferenceVisibleClasses, "ClassLoaderReference.VisibleClasses"},
	{CmdEventRequestSet, "EventRequest.Set"},
	{CmdEventRequestClear, "EventRequest.Clear"},
	{CmdEventRequestClearAllBreakpoints, "EventRequest.ClearAllBreakpoints"},
	{CmdStackFrameGetValues, "StackFrame.GetValues"},
	{CmdStackFrameSetValues, "StackFrame.SetValues"},
	{CmdStackFrameThisObject, "StackFrame.ThisObject"},
	{CmdStackFramePopFrames, "StackFrame.PopFrames"},
	{CmdClassObjectReferenceReflectedType, "ClassObjectReference.ReflectedType"},
	{CmdModuleReferenceName, "ModuleReference.Name"},
	{CmdModuleReferenceClassLoader, "ModuleReference.ClassLoader"},
	{CmdEventComposite, "Event.Composite"},
	{CmdDDMChunk, "DDM.Chunk"},
}

// Error codes of the Java 17 specification (the "Error Constants").
const (
	ErrorNone                                ErrorCode = 0
	ErrorInvalidThread                       ErrorCode = 10
	ErrorInvalidThreadGroup                  ErrorCode = 11
	ErrorInvalidPriority                     ErrorCode = 12
	ErrorThreadNotSuspended                  ErrorCode = 13
	ErrorThreadSuspended                     ErrorCode = 14
	ErrorThreadNotAlive                      ErrorCode = 15
	ErrorInvalidObject                       ErrorCode = 20
	ErrorInvalidClass                        ErrorCode = 21
	ErrorClassNotPrepared                    ErrorCode = 22
	ErrorInvalidMethodID                     ErrorCode = 23
	ErrorInvalidLocation                     ErrorCode = 24
	ErrorInvalidFieldID                      ErrorCode = 25
	ErrorInvalidFrameID                      ErrorCode = 30
	ErrorNoMoreFrames                        ErrorCode = 31
	ErrorOpaqueFrame                         ErrorCode = 32
	ErrorNotCurrentFrame                     ErrorCode = 33
	ErrorTypeMismatch                        ErrorCode = 34
	ErrorInvalidSlot                         ErrorCode = 35
	ErrorDuplicate                           ErrorCode = 40
	ErrorNotFound                            ErrorCode = 41
	ErrorInvalidModule                       ErrorCode = 42
	ErrorInvalidMonitor                      ErrorCode = 50
	ErrorNotMonitorOwner                     ErrorCode = 51
	ErrorInterrupt                           ErrorCode = 52
	ErrorInvalidClassFormat                  ErrorCode = 60
	ErrorCircularClassDefinition             ErrorCode = 61
	ErrorFailsVerification                   ErrorCode = 62
	ErrorAddMethodNotImplemented             ErrorCode = 63
	ErrorSchemaChangeNotImplemented          ErrorCode = 64
	ErrorInvalidTypestate                    ErrorCode = 65
	ErrorHierarchyChangeNotImplemented       ErrorCode = 66
	ErrorDeleteMethodNotImplemented          ErrorCode = 67
	ErrorUnsupportedVersion                  ErrorCode = 68
	ErrorNamesDontMatch                      ErrorCode = 69
	ErrorClassModifiersChangeNotImplemented  ErrorCode = 70
	ErrorMethodModifiersChangeNotImplemented ErrorCode = 71
	ErrorClassAttributeChangeNotImplemented  ErrorCode = 72
	ErrorNotImplemented                      ErrorCode = 99
	ErrorNullPointer                         ErrorCode = 100
	ErrorAbsentInformation                   ErrorCode = 101
	ErrorInvalidEventType                    ErrorCode = 102
	ErrorIllegalArgument                     ErrorCode = 103
	ErrorOutOfMemory                         ErrorCode = 110
	ErrorAccessDenied                        ErrorCode = 111
	ErrorVMDead                              ErrorCode = 112
	ErrorInternal                            ErrorCode = 113
	ErrorUnattachedThread                    ErrorCode = 115
	ErrorInvalidTag                          ErrorCode = 500
	ErrorAlreadyInvoking                     ErrorCode = 502
	ErrorInvalidIndex                        ErrorCode = 503
	ErrorInvalidLength                       ErrorCode = 504
	ErrorInvalidString                       ErrorCode = 506
	ErrorInvalidClassLoader                  ErrorCode = 507
	ErrorInvalidArray                        ErrorCode = 508
	ErrorTransportLoad                       ErrorCode = 509
	ErrorTransportInit                       ErrorCode = 510
	ErrorNativeMethod                        ErrorCode = 511
	ErrorInvalidCount                        ErrorCode = 512
)

var errorTable = []struct {
	code ErrorCode
	name string
}{
	{ErrorNone, "NONE"},
	{ErrorInvalidThread, "INVALID_THREAD"},
	{ErrorInvalidThreadGroup, "INVALID_THREAD_GROUP"},
	{ErrorInvalidPriority, "INVALID_PRIORITY"},
	{ErrorThreadNotSuspended, "THREAD_NOT_SUSPENDED"},
	{ErrorThreadSuspended, "THREAD_SUSPENDED"},
	{ErrorThreadNotAlive, "THREAD_NOT_ALIVE"},
	{ErrorInvalidObject, "INVALID_OBJECT"},
	{ErrorInvalidClass, "INVALID_CLASS"},
	{ErrorClassNotPrepared, "CLASS_NOT_PREPARED"},
	{ErrorInvalidMethodID, "INVALID_METHODID"},
	{ErrorInvalidLocation, "INVALID_LOCATION"},
	{ErrorInvalidFieldID, "INVALID_FIELDID"},
	{ErrorInvalidFrameID, "INVALID_FRAMEID"},
	{ErrorNoMoreFrames, "NO_MORE_FRAMES"},
	{ErrorOpaqueFrame, "OPAQUE_FRAME"},
	{ErrorNotCurrentFrame, "NOT_CURRENT_FRAME"},
	{ErrorTypeMismatch, "TYPE_MISMATCH"},
	{ErrorInvalidSlot, "INVALID_SLOT"},
	{ErrorDuplicate, "DUPLICATE"},
	{ErrorNotFound, "NOT_FOUND"},
	{ErrorInvalidModule, "INVALID_MODULE"},
	{ErrorInvalidMonitor, "INVALID_MONITOR"},
	{ErrorNotMonitorOwner, "NOT_MONITOR_OWNER"},
	{ErrorInterrupt, "INTERRUPT"},
	{ErrorInvalidClassFormat, "INVALID_CLASS_FORMAT"},
	{ErrorCircularClassDefinition, "CIRCULAR_CLASS_DEFINITION"},
	{ErrorFailsVerification, "FAILS_VERIFICATION"},
	{ErrorAddMethodNotImplemented, "ADD_METHOD_NOT_IMPLEMENTED"},
	{ErrorSchemaChangeNotImplemented, "SCHEMA_CHANGE_NOT_IMPLEMENTED"},
	{ErrorInvalidTypestate, "INVALID_TYPESTATE"},
	{ErrorHierarchyChangeNotImplemented, "HIERARCHY_CHANGE_NOT_IMPLEMENTED"},
	{ErrorDeleteMethodNotImplemented, "DELETE_METHOD_NOT_IMPLEMENTED"},
	{ErrorUnsupportedVersion, "UNSUPPORTED_VERSION"},
	{ErrorNamesDontMatch, "NAMES_DONT_MATCH"},
	{ErrorClassModifiersChangeNotImplemented, "CLASS_MODIFIERS_CHANGE_NOT_IMPLEMENTED"},
	{ErrorMethodModifiersChangeNotImplemented, "METHOD_MODIFIERS_CHANGE_NOT_IMPLEMENTED"},
	{ErrorClassAttributeChangeNotImplemented, "CLASS_ATTRIBUTE_CHANGE_NOT_IMPLEMENTED"},
	{ErrorNotImplemented, "NOT_IMPLEMENTED"},
	{ErrorNullPointer, "NULL_POINTER"},
	{ErrorAbsentInformation, "ABSENT_INFORMATION"},
	{ErrorInvalidEventType, "INVALID_EVENT_TYPE"},
	{ErrorIllegalArgument, "ILLEGAL_ARGUMENT"},
	{ErrorOutOfMemory, "OUT_OF_MEMORY"},
	{ErrorAccessDenied, "ACCESS_DENIED"},
	{ErrorVMDead, "VM_DEAD"},
	{ErrorInternal, "INTERNAL"},
	{ErrorUnattachedThread, "UNATTACHED_THREAD"},
	{ErrorInvalidTag, "INVALID_TAG"},
	{ErrorAlreadyInvoking, "ALREADY_INVOKING"},
	{ErrorInvalidIndex, "INVALID_INDEX"},
	{ErrorInvalidLength, "INVALID_LENGTH"},
	{ErrorInvalidString, "INVALID_STRING"},
	{ErrorInvalidClassLoader, "INVALID_CLASS_LOADER"},
	{ErrorInvalidArray, "INVALID_ARRAY"},
	{ErrorTransportLoad, "TRANSPORT_LOAD"},
	{ErrorTransportInit, "TRANSPORT_INIT"},
	{ErrorNativeMethod, "NATIVE_METHOD"},
	{ErrorInvalidCount, "INVALID_COUNT"},
}

// setNames is the specification's name of each command set. Field (8) has
// no commands but is a set of the specification.
var setNames = map[CommandSet]string{
	SetVirtualMachine:       "VirtualMachine",
	SetReferenceType:        "ReferenceType",
	SetClassType:            "ClassType",
	SetArrayType:            "ArrayType",
	SetInterfaceType:        "InterfaceType",
	SetMethod:               "Method",
	SetField:                "Field",
	SetObjectReference:      "ObjectReference",
	SetStringReference:      "StringReference",
	SetThreadReference:      "ThreadReference",
	SetThreadGroupReference: "ThreadGroupReference",
	SetArrayReference:       "ArrayReference",
	SetClassLoaderReference: "ClassLoaderReference",
	SetEventRequest:         "EventRequest",
	SetStackFrame:           "StackFrame",
	SetClassObjectReference: "ClassObjectReference",
	SetModuleReference:      "ModuleReference",
	SetEvent:                "Event",
	SetDDM:                  "DDM",
}

// commandNames and errorNames are the lookup forms of commandTable and
// errorTable. They are built once at package initialisation and never
// written afterwards, so concurrent readers need no lock.
var (
	commandNames = buildCommandNames()
	errorNames   = buildErrorNames()
)

func buildCommandNames() map[Cmd]string {
	m := make(map[Cmd]string, len(commandTable))
	for _, e := range commandTable {
		m[e.cmd] = e.name
	}
	return m
}

func buildErrorNames() map[ErrorCode]string {
	m := make(map[ErrorCode]string, len(errorTable))
	for _, e := range errorTable {
		m[e.code] = e.name
	}
	return m
}

// Known reports whether e is an error code of the specification.
func (e ErrorCode) Known() bool {
	_, ok := errorNames[e]
	return ok
}
