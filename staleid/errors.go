package staleid

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// answer is the VM's answer to a command whose first parameter is an ID
// it never sent over the connection: an error, or (code ErrorNone) a
// reply body.
type answer struct {
	code jdwp.ErrorCode
	body []byte
}

// answerFor is, for each command whose first parameter is an object or
// reference type ID, what HotSpot answers when that ID was never sent
// over the connection, whatever follows it (TestAnswersOfRealVM asks a
// real VM and checks this table). A command not listed is forwarded
// unchecked.
var answerFor = map[jdwp.Cmd]answer{}

// checked lists the commands answerFor covers, each with the VM's answer:
// its error, or no error and the reply's body.
var checked = [...]struct {
	cmd  jdwp.Cmd
	code jdwp.ErrorCode
	body []byte
}{
	// No error: an unknown object counts as collected, and enabling its
	// collection does nothing.
	{jdwp.CmdObjectReferenceIsCollected, jdwp.ErrorNone, []byte{1}},
	{jdwp.CmdObjectReferenceEnableCollection, jdwp.ErrorNone, []byte{}},
	// An error.
	{jdwp.CmdReferenceTypeSignature, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeClassLoader, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeModifiers, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeFields, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeMethods, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeGetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeSourceFile, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeNestedTypes, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeStatus, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeInterfaces, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeClassObject, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeSourceDebugExtension, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeSignatureWithGeneric, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeFieldsWithGeneric, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeMethodsWithGeneric, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeInstances, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeClassFileVersion, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeConstantPool, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdReferenceTypeModule, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdClassTypeSuperclass, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdClassTypeSetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdClassTypeInvokeMethod, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdClassTypeNewInstance, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdArrayTypeNewInstance, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdInterfaceTypeInvokeMethod, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdMethodLineTable, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdMethodVariableTable, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdMethodBytecodes, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdMethodIsObsolete, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdMethodVariableTableWithGeneric, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceReferenceType, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceGetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceSetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceMonitorInfo, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceInvokeMethod, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceDisableCollection, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdObjectReferenceReferringObjects, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdStringReferenceValue, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceName, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceSuspend, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceResume, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceStatus, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceThreadGroup, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceFrames, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceFrameCount, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceOwnedMonitors, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceCurrentContendedMonitor, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceStop, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceInterrupt, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceSuspendCount, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceOwnedMonitorsStackDepthInfo, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadReferenceForceEarlyReturn, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadGroupReferenceName, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadGroupReferenceParent, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdThreadGroupReferenceChildren, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdArrayReferenceLength, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdArrayReferenceGetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdArrayReferenceSetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdClassLoaderReferenceVisibleClasses, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdStackFrameGetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdStackFrameSetValues, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdStackFrameThisObject, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdStackFramePopFrames, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdClassObjectReferenceReflectedType, jdwp.ErrorInvalidObject, nil},
	{jdwp.CmdModuleReferenceName, jdwp.ErrorInvalidModule, nil},
	{jdwp.CmdModuleReferenceClassLoader, jdwp.ErrorInvalidModule, nil},
}

func init() {
	for _, c := range checked {
		answerFor[c.cmd] = answer{c.code, c.body}
	}
}
