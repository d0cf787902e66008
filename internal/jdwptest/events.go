package jdwptest

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// AppendComposite appends the body of an Event.Composite command carrying
// c's events to dst. Wrap it with jdwp.AppendCommand(dst, id,
// jdwp.CmdComposite, body) to make the packet a VM would send. (Package
// jdwp's own tests have a copy: they cannot import this package.)
func AppendComposite(dst []byte, sizes jdwp.IDSizes, c *jdwp.Composite) []byte {
	w := jdwp.BodyWriter{Buf: dst, Sizes: sizes}
	w.Uint8(uint8(c.SuspendPolicy))
	w.Int32(int32(len(c.Events)))
	for i := range c.Events {
		c.Events[i].Append(&w)
	}
	return w.Buf
}

// VersionBody is the body of a VirtualMachine.Version reply of a Java 17
// VM called vmName whose JDWP agent describes itself as desc (the
// reference agent's description begins "Java Debug Wire Protocol
// (Reference Implementation)").
func VersionBody(desc, vmName string) []byte {
	w := jdwp.BodyWriter{}
	w.String(desc)
	w.Int32(17)
	w.Int32(0)
	w.String("17")
	w.String(vmName)
	return w.Buf
}
