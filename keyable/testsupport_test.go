package keyable

// Test support: helpers that only the tests of this package use, kept out of
// the binary.

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// Commands lists every cacheable command.
func Commands() []jdwp.Cmd {
	var out []jdwp.Cmd
	for i := range table {
		if table[i].Cacheable() {
			out = append(out, table[i].Cmd)
		}
	}
	return out
}

// TypeOf is the type (command set, command) of a command packet. Replies
// carry no type: it comes from the command they answer (see package
// trigger), so TypeOf reports false for them and for short packets.
func TypeOf(p jdwp.Packet) (jdwp.Cmd, bool) {
	if len(p) < jdwp.HeaderSize || p.IsReply() {
		return jdwp.Cmd{}, false
	}
	return p.Cmd(), true
}

// Of returns the key and info of a command packet, or false when the
// command is not cacheable, its body does not match the command's layout
// under the given ID sizes, or it is longer than MaxParams.
func Of(p jdwp.Packet, sizes jdwp.IDSizes) (Key, Info, bool) {
	if len(p) < jdwp.HeaderSize || p.IsReply() {
		return Key{}, Info{}, false
	}
	return New(p.Cmd(), p.Body(), sizes)
}

// New returns the key and info of command c with body params, or false as
// for Of.
func New(c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) (Key, Info, bool) {
	var k Key
	info, ok := Fill(&k, c, params, sizes)
	return k, info, ok
}
