package staleid

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// errorFor is, for each command whose first parameter is an object or
// reference type ID, the error HotSpot answers when that ID was never
// sent over the connection, whatever follows it (TestErrorsOfRealVM asks
// a real VM and checks this table). A command not listed is forwarded
// unchecked: its first parameter is no such ID, or the VM's answer to an
// unknown one is no error (ObjectReference.IsCollected says true,
// EnableCollection succeeds: see unanswered).
var errorFor = map[jdwp.Cmd]jdwp.ErrorCode{}

// checked lists the commands errorFor covers, each with the VM's error.
var checked = [...]struct {
	cmd  jdwp.Cmd
	code jdwp.ErrorCode
}{
	{jdwp.CmdReferenceTypeSignature, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeClassLoader, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeModifiers, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeFields, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeMethods, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeGetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeSourceFile, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeNestedTypes, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeStatus, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeInterfaces, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeClassObject, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeSourceDebugExtension, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeSignatureWithGeneric, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeFieldsWithGeneric, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeInstances, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeClassFileVersion, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeConstantPool, jdwp.ErrorInvalidObject},
	{jdwp.CmdReferenceTypeModule, jdwp.ErrorInvalidObject},
	{jdwp.CmdClassTypeSuperclass, jdwp.ErrorInvalidObject},
	{jdwp.CmdClassTypeSetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdClassTypeInvokeMethod, jdwp.ErrorInvalidObject},
	{jdwp.CmdClassTypeNewInstance, jdwp.ErrorInvalidObject},
	{jdwp.CmdArrayTypeNewInstance, jdwp.ErrorInvalidObject},
	{jdwp.CmdInterfaceTypeInvokeMethod, jdwp.ErrorInvalidObject},
	{jdwp.CmdMethodLineTable, jdwp.ErrorInvalidObject},
	{jdwp.CmdMethodVariableTable, jdwp.ErrorInvalidObject},
	{jdwp.CmdMethodBytecodes, jdwp.ErrorInvalidObject},
	{jdwp.CmdMethodIsObsolete, jdwp.ErrorInvalidObject},
	{jdwp.CmdMethodVariableTableWithGeneric, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceReferenceType, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceGetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceSetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceMonitorInfo, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceInvokeMethod, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceDisableCollection, jdwp.ErrorInvalidObject},
	{jdwp.CmdObjectReferenceReferringObjects, jdwp.ErrorInvalidObject},
	{jdwp.CmdStringReferenceValue, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceName, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceSuspend, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceResume, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceStatus, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceThreadGroup, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceFrames, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceFrameCount, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceOwnedMonitors, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceCurrentContendedMonitor, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceStop, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceInterrupt, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceSuspendCount, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceOwnedMonitorsStackDepthInfo, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadReferenceForceEarlyReturn, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadGroupReferenceName, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadGroupReferenceParent, jdwp.ErrorInvalidObject},
	{jdwp.CmdThreadGroupReferenceChildren, jdwp.ErrorInvalidObject},
	{jdwp.CmdArrayReferenceLength, jdwp.ErrorInvalidObject},
	{jdwp.CmdArrayReferenceGetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdArrayReferenceSetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdClassLoaderReferenceVisibleClasses, jdwp.ErrorInvalidObject},
	{jdwp.CmdStackFrameGetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdStackFrameSetValues, jdwp.ErrorInvalidObject},
	{jdwp.CmdStackFrameThisObject, jdwp.ErrorInvalidObject},
	{jdwp.CmdStackFramePopFrames, jdwp.ErrorInvalidObject},
	{jdwp.CmdClassObjectReferenceReflectedType, jdwp.ErrorInvalidObject},
	{jdwp.CmdModuleReferenceName, jdwp.ErrorInvalidModule},
	{jdwp.CmdModuleReferenceClassLoader, jdwp.ErrorInvalidModule},
}

func init() {
	for _, c := range checked {
		errorFor[c.cmd] = c.code
	}
}
