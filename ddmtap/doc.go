// Package ddmtap owns the proxy's DDM (Dalvik Debug Monitor) side, built
// on the chunk codec of package ddm: the per-VM Monitor (identity, thread
// table, heap summaries and heap maps with DDMS-style statistics), the DDM
// client that pairs its own requests with their replies by packet ID, the
// Holder that keeps a VM connection for monitoring while no debugger is
// attached and hands it, untouched, to the next debugger, and the
// relay.Interceptor that keeps DDM running alongside a debugger session.
//
// Packets are JDWP (199,1) commands in both directions; DDM replies carry no
// chunk type in the JDWP header and are paired with their requests by the
// connection's retag.Table, where the client keeps each request in its
// slot of the table's entry (it keeps no pending map of its own). The
// client's packet IDs come from the VM connection's retag.Table, the only
// allocator of IDs towards the VM: the Holder creates it with each
// connection it dials (the client sends before any session) and hands it
// over with the connection (relay.VMConn.IDs), so the session's relay and
// speculator share it, IDs still in flight are never reused, and a reply
// to the client's request never reaches a debugger, even a late one.
//
// The rule for what the proxy sends on its own: DDM only to a VM known to
// speak it (found through adb, --ddm=force, or whose reply to the
// debugger's own VirtualMachine.Version names an Android runtime), never to
// HotSpot (command set 199 can crash it) or an unknown VM, and nothing else
// at all (see link.begin). Nor does the speculator send anything of its
// own on a session whose client has sent only DDM (ddmlib, adblib): ART
// would load its JDWP agent for the first non-DDM command and from then on
// answer DDM requests (THEN, HPIF, HPSG, HPGC) with empty replies it never
// sends a DDM-only client directly (see fakevm.ART).
package ddmtap
