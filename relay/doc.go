// Package relay owns the proxy's sessions: it accepts a debugger, dials the
// VM, performs the JDWP handshake on both sides, classifies every packet
// (debugger command, VM reply paired with its command, VM event, DDM or
// other VM command, debugger reply) and forwards it unchanged, one writer
// per side. Feature packages plug in as Interceptors (which may answer,
// drop or inject packets) and Observers (which see every packet).
//
// The relay is where commands are paired with their answers: commands
// towards the VM, the debugger's and the proxy's own (Outbox.SendToVM),
// in the VM connection's retag.Table (Session.IDs), which also hands out
// the packet IDs of the proxy's own commands; the debugger commands the
// proxy answers itself, and the VM's commands to the debugger, in the
// session. A hook that needs per-command data keeps it in its Slot of the
// entry (Frame.SetData, Outbox.SendToVMData) and gets it back on the
// answer (Frame.Data), instead of keeping a pending map of its own.
//
// Hooks return what they send. All hook code of a session runs in the
// session's turn (Session.turn, a lock only the relay takes): interceptor
// and observer calls, lifecycle calls, and work hooks queue with
// Session.Do from goroutines of their own (timers, a client's loop). One
// turn runs at a time; what a hook sends goes to the session's one Outbox
// (Frame.Out, or Do's argument) and is applied by the relay when the hook
// returns, before the turn is given up: each packet is observed and
// queued for its peer's writer, in the order sent, before the packet the
// turn is for, except an answer to the debugger command of the turn,
// which follows that command. So:
//
//   - every packet, forwarded or injected, is observed exactly once, in
//     the turn that queued it, in the order the packets of each peer are
//     queued; a debugger command is observed before any answer to it, even
//     one sent from the VM's side at once (the speculator serving a belay);
//   - what a turn decides goes to the writers before any later turn's, so
//     a command the proxy sends towards the VM never overtakes, nor is
//     overtaken by, a debugger command handled after, or before, it;
//   - observers run under no hook's lock, and hooks need no lock of their
//     own for state only hook code touches.
//
// One exception to "when the hook returns": a hook handling a VM's packet
// may apply what it sent so far at once (Outbox.Flush), an answer the
// debugger waits for, and go on deciding the rest; the order is the
// same. Observers then run under whatever locks the flushing hook holds,
// so it must hold none an observer takes (the speculator holds its own,
// which no observer takes).
//
// Each reader takes the turn for each packet it reads (a session with no
// hooks takes none), runs the hooks, applies the outbox and queues the
// packet, gives the turn up, and only then waits for room in the writer's
// queue. Nothing blocks inside a turn: hooks must not block (a Gate holds
// the debugger's packets back before the turn), and queueing copies into
// the writer's buffer. A reader blocked reading its peer holds no turn, so
// Do work never waits for a peer: Do runs it at once on the caller's
// goroutine if the turn is free, or leaves it to the goroutine holding the
// turn, which runs queued work before giving it up (Session.endTurn).
//
// Buffer ownership: each reader owns its Frame and its jdwp.Reader's
// buffer; the session's Outbox and the Frame its packets are observed in
// are owned by whoever holds the turn; each writer's queue is its own (see
// sideWriter). Forwarding allocates nothing per packet.
//
//	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP("127.0.0.1:5005")})
//	err := srv.Serve(ctx, listener)
package relay
