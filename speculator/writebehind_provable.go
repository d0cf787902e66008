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
//       ClassMatch and ClassExclude (any pattern, as above), succeeds:
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
	locations, steps := 0, 0
	for i := range c.mods {
		switch c.mods[i].Kind {
		case jdwp.ModCount, jdwp.ModClassOnly:
		case jdwp.ModClassMatch, jdwp.ModClassExclude:
			if c.kind != jdwp.EventClassPrepare && c.kind != jdwp.EventSingleStep {
				return false
			}
		case jdwp.ModStep:
			steps++
		case jdwp.ModLocationOnly:
			locations++
		case jdwp.ModThreadOnly:
			if c.kind != jdwp.EventBreakpoint && !methodEvent(c.kind) {
				return false
			}
		case jdwp.ModInstanceOnly:
			if !methodEvent(c.kind) {
				return false
			}
		default:
			return false
		}
	}
	switch c.kind {
	case jdwp.EventThreadStart, jdwp.EventThreadDeath:
		for i := range c.mods {
			if c.mods[i].Kind != jdwp.ModCount {
				return false
			}
		}
		return true
	case jdwp.EventClassPrepare:
		return locations == 0 && steps == 0
	case jdwp.EventBreakpoint:
		return locations == 1 && steps == 0
	case jdwp.EventSingleStep:
		return steps == 1 && locations == 0
	case jdwp.EventMethodEntry, jdwp.EventMethodExit, jdwp.EventMethodExitWithReturnValue:
		return steps == 0 && locations == 0
	}
	return false
}

// methodEvent says whether k is a method entry or exit event kind.
func methodEvent(k jdwp.EventKind) bool {
	return k == jdwp.EventMethodEntry || k == jdwp.EventMethodExit || k == jdwp.EventMethodExitWithReturnValue
}
