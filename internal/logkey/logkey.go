// Package logkey owns the names of the structured log fields that more
// than one package writes, so that every package spells them the same way
// (lower_snake). A field only one package writes is named in that package.
package logkey

// Log field names.
const (
	Session      = "session"
	Debugger     = "debugger"
	VM           = "vm" // a VM's address, or where a jdwp:PID stream leads
	PacketID     = "packet_id"
	Cmd          = "cmd"
	Kind         = "kind"
	Length       = "length"
	Reason       = "reason" // why something ended or was refused
	Listen       = "listen" // a listener's address
	Dir          = "dir"
	Hook         = "hook"
	Panic        = "panic"
	Stack        = "stack"
	Max          = "max"
	ErrorCode    = "error_code"
	Attempts     = "attempts"
	WriteTimeout = "write_timeout"
	ClosedBy     = "closed_by"  // debugger, vm or proxy: whose connection ended a session
	Component    = "component"  // the package or part that logged: ddm, speculator, journal, discover, web
	PID          = "pid"        // a process ID (a device's or this machine's)
	Serial       = "serial"     // an adb device's serial
	Device       = "device"     // an adb device's serial, on the adb front and the fake device
	Suppressed   = "suppressed" // like lines held back since the last one (rate-limited logs)
	RTT          = "rtt"        // a link's round trip
	User         = "user"       // on split mode's far end, the user whose credentials the near end presented
)
