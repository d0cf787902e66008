// Package share owns the sharing of one VM connection among several JDWP
// clients at once: an IDE debugging, a tracer watching, an agent reading,
// DDM monitors. It sits in front of the relay, on the debugger's side: for
// each VM a Hub is the one "debugger" the relay session sees (over an
// in-memory pipe), and it merges its real clients into that one stream.
// The relay, its speculator, the journal and the DDM tap run unchanged on
// the merged stream, so every client is served by the same cache.
//
// The hub owns, for its clients:
//
//   - the handshakes: it answers each client's JDWP handshake itself, once
//     the relay session reached the VM;
//   - packet IDs: each client's commands get IDs in the hub's one ID space
//     towards the relay (a client's own ID when it is free, so a lone
//     client's stream is byte for byte what it sent), and replies get the
//     client's ID back;
//   - events: it learns which client owns each event request from the
//     EventRequest.Set replies and routes each event by its request ID; a
//     composite holding several clients' events is split, each copy with
//     that client's own suspend policy; VM_START and VM_DEATH go to all;
//   - roles: the controller may do everything JDWP allows; an observer only
//     what changes nothing in the VM (see Rule and the README's "Several
//     tools on one VM");
//   - leaving: a client that leaves while others stay is undone for itself
//     alone (its event requests cleared, the suspensions it caused
//     released, the objects it pinned let go); the last one to leave ends
//     the relay session as a lone debugger would.
//
// A Front holds the current hub of one VM and makes a new one when the
// last client of the previous one left; Listener puts a Front behind a
// net.Listener, so that relay.Server.Serve serves shared sessions as it
// serves plain ones.
package share
