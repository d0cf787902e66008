package speculator

import "github.com/jdwpaccel/jdwpaccel/jdwp"

// Which EventRequest.Set shapes HotSpot accepts whatever came before, so
// that the first Set of such a shape in a session may be written behind
// (writeBehind.proven) instead of waiting a round trip to be seen
// accepted. An attach sets many of them: IDEs ask to hear of each class
// holding breakpoints, and of its inner classes ("C$*"), most never
// loaded, and JDI sets the breakpoints it deferred when each one loads.
//
// The proof, for HotSpot's reference JDWP agent (JDWP spec, and what the
// JDK 17 VM answered; TestWriteBehindPatternBurstRealVM and
// TestWriteBehindTimedSetRealVM check them on the real VM). The agent
// answers a Set in this order:
//
//  1. It reads the event kind and rejects one it does not know
//     (INVALID_EVENT_TYPE for 0, 3, 0x7F). CLASS_PREPARE and BREAKPOINT
//     are known.
//  2. It reads the suspend policy without checking it (3 and 0xFF are
//     accepted); write-behind still takes only NONE, EVENT_THREAD and ALL.
//  3. It reads the modifier count and each modifier, and stops at the
//     first that fails: an unknown modifier kind (ILLEGAL_ARGUMENT), a
//     Count not positive (INTERNAL), a body ending early (INTERNAL), an
//     ID it does not know (INVALID_OBJECT), a modifier the event kind
//     does not take (ClassMatch on THREAD_START: ILLEGAL_ARGUMENT).
//     ClassMatch and ClassExclude take any string (empty, "**.$[]", not
//     UTF-8). A request ID is taken only once all modifiers were read:
//     none of these errors uses one. write-behind's reader (eventRequest.read) takes only a body
//     whose modifiers all parse and that has nothing after them, and
//     proven checks each modifier's values and IDs as before.
//  4. It installs the request under the next request ID, from one
//     counter (the only thing that advances it is an install: IDs are
//     consecutive whether the VM is suspended or running, whatever events
//     it sends; seqHotSpot in writeBehind.proven). An install can fail
//     after taking its ID (a breakpoint JVMTI refuses); the Set's error
//     then says so and write-behind forgets the last ID (seqExact).
//     - CLASS_PREPARE: installing enables JVMTI's ClassPrepare events,
//       which needs no capability and does not fail. So a CLASS_PREPARE
//       request whose modifiers are Count, ClassMatch, ClassExclude and
//       ClassOnly (of a class proven valid) always succeeds.
//     - BREAKPOINT: the agent takes the request's one location (a
//       breakpoint without one fails: INTERNAL, its ID used), checks its
//       class, and sets a JVMTI breakpoint there unless one of its
//       requests already has one (two requests at one location both
//       succeed; so does one with a ClassOnly of the class). JVMTI checks
//       the method and that the code index is within the method's code
//       (past it: INVALID_LOCATION, its ID used); the agent holds the
//       breakpoint capability. So a BREAKPOINT request
//       with exactly one LocationOnly, at a location proven valid (seen
//       accepted, or within its method's range from a LineTable reply:
//       writeBehind.inRange), and otherwise Count, ThreadOnly (a thread
//       proven alive) and ClassOnly (a class proven valid), succeeds.
//     - THREAD_START and THREAD_DEATH: installing enables JVMTI's
//       ThreadStart and ThreadEnd events, which need no capability and
//       do not fail. So such a request with no modifier but Count
//       succeeds (debuggers set them unfiltered at attach: java-debug
//       both).
//     - SINGLE_STEP: the Step modifier (taken for no other kind:
//       ILLEGAL_ARGUMENT) begins the step as it is read (stepControl's
//       beginStep): it fails only for a thread the agent keeps no step
//       state of (INVALID_THREAD: not started, or ended), suspends the
//       thread once more, overwrites any step pending on it (the VM
//       answers no DUPLICATE; JDI refuses a second step request itself),
//       and reads its frame count and, for a line step, its top frame's
//       location: no frames is a step from native code, an opaque or
//       already watched top frame is taken as is. Installing it then
//       enables nothing (stepping enables itself). So a SINGLE_STEP
//       request with exactly one Step, on a thread proven alive and
//       suspended with no other step request of this session active, of
//       size MIN or LINE and depth INTO, OVER or OUT, and otherwise Count,
//       ClassOnly (a class proven valid; refused only for thread and
//       GC events), ClassMatch and ClassExclude (any pattern, as above),
//       succeeds:
//       the first step a session sets, at its first stop, need not wait
//       a round trip to be seen accepted.
//     - METHOD_ENTRY, METHOD_EXIT and METHOD_EXIT_WITH_RETURN_VALUE (the
//       last is METHOD_EXIT's handler with the return value kept): the
//       filters ThreadOnly, ClassOnly and InstanceOnly are taken for them
//       as read (only their IDs are checked), and installing enables
//       JVMTI's MethodEntry or MethodExit events, globally or, with a
//       ThreadOnly, on that thread (deferred until it starts, if it has
//       not). The agent does not start without the capabilities for them
//       (debugInit's needed capabilities: can_generate_method_entry_events
//       and _exit_events), and enabling them on a live thread does not
//       fail. So such a request whose modifiers are Count, ThreadOnly (a
//       thread proven alive), ClassOnly (a class proven valid) and
//       InstanceOnly (an object proven reachable) succeeds: java-debug
//       sets one at each stop (a method exit with its return value, on
//       the stopped thread and its frame's this), the first of them at
//       the session's first stop.
//
// What proven keeps for every Set: a thread only when proven alive (a
// ThreadOnly of null brought the JDK 17 VM down: it is never proven), a
// class or location only when proven valid, a Count only when positive.
// Shapes from other VMs are taken only once seen accepted in the session
// or in a profile of the same kind of VM (writebehind_profile.go).

// provableShape says whether c's shape (well formed) is one HotSpot
// accepts whatever came before (see above); the IDs and values in its
// modifiers are for proven to check.
func provableShape(c *wbCmd) bool {
	if c.shape.n == malformed || jdwp.SuspendPolicy(c.shape.b[1]) > jdwp.SuspendAll {
		return false
	}
	p, ok := provableMods[c.kind]
	if !ok {
		return false
	}
	once := 0
	for i := range c.mods {
		k := c.mods[i].Kind
		if p.may&modBit(k) == 0 {
			return false
		}
		if k == p.once {
			once++
		}
	}
	return p.once == 0 || once == 1
}

// provableMods are, by event kind, the modifiers a provable shape may
// carry (see above), and the one it must carry exactly once, if any.
var provableMods = map[jdwp.EventKind]struct {
	may  uint32 // modBit of each
	once jdwp.ModKind
}{
	jdwp.EventThreadStart:               {may: modBits(jdwp.ModCount)},
	jdwp.EventThreadDeath:               {may: modBits(jdwp.ModCount)},
	jdwp.EventClassPrepare:              {may: modBits(jdwp.ModCount, jdwp.ModClassOnly, jdwp.ModClassMatch, jdwp.ModClassExclude)},
	jdwp.EventBreakpoint:                {may: modBits(jdwp.ModCount, jdwp.ModClassOnly, jdwp.ModThreadOnly, jdwp.ModLocationOnly), once: jdwp.ModLocationOnly},
	jdwp.EventSingleStep:                {may: modBits(jdwp.ModCount, jdwp.ModClassOnly, jdwp.ModClassMatch, jdwp.ModClassExclude, jdwp.ModStep), once: jdwp.ModStep},
	jdwp.EventMethodEntry:               {may: methodMods},
	jdwp.EventMethodExit:                {may: methodMods},
	jdwp.EventMethodExitWithReturnValue: {may: methodMods},
}

// methodMods are the modifiers of a provable method entry or exit shape.
var methodMods = modBits(jdwp.ModCount, jdwp.ModClassOnly, jdwp.ModThreadOnly, jdwp.ModInstanceOnly)

// modBit is k's bit in a set of modifier kinds (none for a kind past 31).
func modBit(k jdwp.ModKind) uint32 {
	if k > 31 {
		return 0
	}
	return 1 << k
}

func modBits(ks ...jdwp.ModKind) uint32 {
	var b uint32
	for _, k := range ks {
		b |= modBit(k)
	}
	return b
}
