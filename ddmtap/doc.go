// Package ddmtap owns the proxy's DDM (Dalvik Debug Monitor) side, built
// on the chunk codec of package ddm: the per-VM Monitor (identity, thread
// table, heap summaries and heap maps with DDMS-style statistics), the DDM
// client that pairs its own requests with their replies by packet ID, the
// Holder that keeps a VM connection for monitoring while no debugger is
// attached and hands it, untouched, to the next debugger, and the
// relay.Interceptor that keeps DDM running alongside a debugger session.
//
// Packets are JDWP (199,1) commands in both directions; DDM replies carry no
// chunk type in the JDWP header and are paired through pending IDs.
//
// The rule for what the proxy sends on its own: DDM only to a VM known to
// speak it (found through adb, --ddm=force, or whose reply to the
// debugger's own VirtualMachine.Version names an Android runtime), never to
// HotSpot (command set 199 can crash it) or an unknown VM, and nothing else
// at all (see link.begin).
package ddmtap
