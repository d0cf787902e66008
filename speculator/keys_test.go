package speculator

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
)

// keyOf is the key and info of command packet p, or false when it has none
// (see keyable.Fill).
func keyOf(p jdwp.Packet, sizes jdwp.IDSizes) (keyable.Key, keyable.Info, bool) {
	if len(p) < jdwp.HeaderSize || p.IsReply() {
		return keyable.Key{}, keyable.Info{}, false
	}
	return newKey(p.Cmd(), p.Body(), sizes)
}

// newKey is the key and info of command c with body params, or false when
// it has none (see keyable.Fill).
func newKey(c jdwp.Cmd, params []byte, sizes jdwp.IDSizes) (keyable.Key, keyable.Info, bool) {
	var k keyable.Key
	info, ok := keyable.Fill(&k, c, params, sizes)
	return k, info, ok
}

// keyableTable is keyable's command table: a row for every command
// keyable.Describe knows, by command set and command.
func keyableTable() []keyable.Command {
	var rows []keyable.Command
	for set := range 256 {
		for cmd := range 256 {
			c := jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: uint8(cmd)}
			if info, ok := keyable.Describe(c); ok {
				rows = append(rows, keyable.Command{Cmd: c, Info: info})
			}
		}
	}
	return rows
}
