// Package speculator owns jdwpaccel's speculative reply cache: a
// relay.Interceptor per session that answers the debugger's read-only
// commands from a cache of the VM's replies, sends predicted commands to
// the VM ahead of the debugger (speculation), holds a debugger command
// whose prediction is in flight until its reply arrives (belay), answers
// state-setting commands whose reply it can prove (write-behind), and
// invalidates exactly when the VM's state may have changed.
//
// Validity (see keyable.Tier): VM-lifetime facts are kept for the session;
// class-lifetime facts until the class is unloaded or redefined;
// object-lifetime facts until the debugger disposes the object's ID;
// stop-state facts only while nothing can have changed them — any resume,
// invoke, mutation, redefinition or suspension change invalidates them,
// and a fact about one thread is kept only while that thread is suspended,
// a fact about anything else only while the whole VM is. Every command
// records the invalidation generation when it is sent; its reply is stored
// only if nothing invalidated it since, so a reply the VM computed before
// a resume is never served after it.
//
// Never harm the VM: everything the speculator sends is a read-only command
// a careful debugger could send in that state, with IDs the VM handed out
// in this session and valid for that command (field IDs of the object's own
// class or its superclasses, frames of the current stop, live slots). The
// rule is written out, and enforced just before sending, in safety.go.
//
// # Shape: a router, a core, and parts
//
// A session (session.go, events.go) is a router. It owns the path of each
// packet: it applies what the packet does to the core, then hands it to
// each part that reacts to it, once, in the order of the parts table.
//
// The core (core.go) is the parts' shared input, one owner type per piece,
// all guarded by the session's one lock: facts (facts.go, safety.go: the
// invalidation generations, the suspension, class signatures, object
// types, the class facts speculative IDs are checked against, the
// threads' frame generations), replyCache (cache.go: the LRU within its
// byte budget), learner (learner.go: the stops, templates, learned
// parameters, usage gates) and dispatcher (dispatch.go: the in-flight
// budget, the queue, the output to the VM, the moments its reads of
// running state go in); and the outbox of the relay's
// turn, which everything a part sends goes to. The core adds only the
// gates every speculation passes (admit, sendOwn).
//
// The parts are the rule sets, each a type of its own with its own state
// and file. A part reacts to the phases whose interface it implements
// (parts.go); it reads the core, and emits through it (speculation to the
// dispatcher, answers and its own commands to the outbox) or through what
// the phase returns. The table, in its order (newSession), with what each
// part reacts to:
//
//	part             file                       reacts to
//	attach           attach.go, lookup.go,      first command, VM_START (also composite, taken), asked,
//	                 snapshot.go                command (lookups), replied, CLASS_PREPARE, CLASS_UNLOAD
//	writeBehind      writebehind*.go            command, replied (settle, read), composite (seen, taken), profile
//	prepareRule      predict_prepare.go         command (requests, resume), asked, replied (Methods), CLASS_PREPARE, stopped, profile
//	framePrediction  framepredict.go            wave 1, frame, hold
//	stopRules        predict.go                 waves 0-2, frame, chain (AllThreads, FrameCount), missed
//	valueRules       predict_values.go          chain (values, types, array lengths)
//	shapeRules       shapes.go                  asked (field order), chain (types, Fields, Superclass), profile
//	learnedRules     learned*.go                event kind, stopped, asked, replied, wave 0, frame, chain, profile
//	liveness         liveness.go                command (IsCollected of a suspended thread)
//
// A debugger's command: a cacheable one is learned (learner, then asked),
// answered from the cache or a speculation in flight, or missed; any other
// is seen by the commanders (which may answer it: lookups, write-behind)
// before its effect on facts (keyable.Effect) is applied. A reply: facts
// take in its effect and what it names, the repliers see it, it is stored
// if still valid, and a reply valid in the current stop is chained on (a
// Frames reply frame by frame: framers; any other: chainers). A composite
// event: the subscribed handlers (package trigger) fire as it is read,
// the compositors see it, facts take in its suspension, and a suspending
// stop goes to the stoppers and, at a location, the wavers.
//
// Speculation starts from each suspending event and chains through the
// replies (frames, then frame values and this, then the objects found),
// replaying what the debugger asked at the previous stop ("templates") and
// dropping predictions the debugger does not use. The learned rules
// (learned.go) need no knowledge of the client: per kind of stop they
// learn each command the debugger asked with where each of its parameters
// came from (the event, a path in an earlier reply of the stop — "each
// thread of the AllThreads reply", "each object value of frame 0's
// values" —, a field's position in the object's type chain, a constant),
// and replay that graph at the next stop reply by reply; the rules
// written for IDEs remain for what they do that a graph cannot (ints from
// replies, frame IDs predicted, the first stop of a new client). It runs only when the
// measured round trip makes it worth the VM time it costs. On HotSpot,
// frame values and this are sent with the frames, on frame IDs predicted
// from the thread's frame generation (framepredict.go), and served only
// once the stop's Frames reply confirms them. At a suspending
// CLASS_PREPARE of a class the debugger asked to be told of, the reads it
// resolves breakpoints with are sent with the event (predict_prepare.go).
//
// State-setting commands (EventRequest.Set and Clear, resumes) whose reply
// can be proven from what the VM did before in the session are answered at
// once and sent on pipelined (writebehind.go, Config.WriteBehind); a VM
// that answers otherwise ends the session.
//
// At attach (attach.go) the session prefetches what every debugger asks
// first, and replays the attach sequence an earlier session of the same
// debugger on the same kind of VM recorded, by class signature and method
// name, with this connection's IDs. That profile (persist.go) is kept
// across sessions and optionally in a file (Config.LearnFile); the learner
// and each part take their own share of it and leave their own
// (importFrom, exportTo): the profile reaches into none of them. Before
// any session learned one, a built-in prior (prior.go: what a session
// learns of a JDI debugger's attach, JDK classes only) stands in for it.
// While the whole VM is suspended at attach, lookups by name are answered
// from one class snapshot when it pays (snapshot.go). At a method or type
// the debugger never showed, the stop rules read what JDI shows there:
// the visible variables, the visible instance fields.
//
// Split mode (package push) uses the seams of export.go: a session whose
// mode forces speculation on (far end) or off (near end), changed by
// SetMode; a Tap told where the session's stops stand (stop n began,
// ended), of its idle moments and of each speculative reply stored, so
// that push never calls the session back for its state; and Offer, which
// stores a reply fetched elsewhere under the same validity rules.
package speculator
