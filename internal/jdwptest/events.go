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
