package fakevm

import (
	"fmt"
)

// Profile selects the DDM behaviour.
type Profile int

const (
	// Design2007 speaks the payload layouts of the March 2007 draft design
	// document ("Dalvik VM Debug Monitor", docs/debugmon.html), which no
	// shipped VM used: a HELO reply that ends at the app name, and THST in
	// the draft layout (u4 count; per thread u4 id, u1 state 1..8, u1
	// suspended); no FEAT, STKL, MPRQ or allocation tracking; unknown
	// requests get an empty reply. Request semantics are the shipped ones,
	// not the draft's: THST is polled and answered (the draft's u4
	// interval for periodic pushes was never built) and the HPIF summary
	// comes as a VM-originated chunk (the draft: in the reply). The
	// profile exists to exercise decoders on the draft layouts. No version
	// of ddmlib or adblib reads the draft THST (ddmlib 25.2.2 misreads its
	// u4 count as header length, entry length and count, then throws
	// BufferUnderflowException): point real tools at Dalvik or ART.
	Design2007 Profile = iota
	// Dalvik is a Dalvik-era VM (Android 4.4): HELO with user id, ABI and
	// JVM flags, FEAT, THST in the real layout, HPIF/HPSG/NHSG heap walks,
	// allocation tracking; null handler results give an empty reply.
	Dalvik
	// ART is a modern ART (adbconnection, Android 12+): HELO up to the
	// package name, FEAT, threads; no heap handlers; null results and
	// unhandled requests (THEN, HPIF, HPSG, HPGC...) get no reply at all
	// until a non-DDM packet loads the JDWP agent, then an empty reply.
	// That is ART's own behaviour since Android 9: its adbconnection
	// plugin handles DDM without the agent and, when the chunk handler
	// returns nothing, sends no reply "to match historical behavior"
	// (adbconnection.cc, HandleDataWithoutAgent); the first packet of
	// another command set loads the agent (AttachJdwpAgent), whose DDM
	// extension answers such requests with an empty reply. So a proxy
	// must not send such a VM a JDWP command of its own while only a DDM
	// client (ddmlib, adblib) is attached: the VM would load its agent and
	// answer the client what it never answers directly.
	ART
)

// Profiles lists the profile names accepted by ParseProfile.
var Profiles = []string{"design2007", "dalvik", "art"}

func (p Profile) String() string {
	if p >= 0 && int(p) < len(Profiles) {
		return Profiles[p]
	}
	return "unknown"
}

// ParseProfile maps a name of Profiles to a Profile.
func ParseProfile(s string) (Profile, error) {
	for i, n := range Profiles {
		if n == s {
			return Profile(i), nil
		}
	}
	return 0, fmt.Errorf("fakevm: unknown profile %q (want one of %v)", s, Profiles)
}
