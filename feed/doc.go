// Package feed owns the bounded event history of each VM and the cursors
// into it: the live event feed that tools speaking no JDWP (a tracer, an
// agent) follow over HTTP (web serves it as server-sent events at
// /api/v1/vms/{vm}/events).
//
// A Feed is a relay observer (add it to every session's Hooks.Observers):
// it decodes the VM-originated Event.Composite packets the debugger
// receives with package jdwp's event table (stops with their thread and
// location, thread starts and deaths, class prepares, VM start and death),
// and records each session's start and end. The DDM tap's thread changes
// (THCR, THNM, THDE) come in through DDMThread. It never sends anything to
// the VM: names of threads, classes and methods appear only when Names
// (package convo, which reads the debugger's own conversation) already
// knows them.
//
// Each VM has a history of at most Size events (DefaultHistory unless
// set), held in a ring of fixed records that is allocated once and reused:
// its memory stays within Size records of fixed size, with at most
// MaxSignature bytes of class signature, and of each name, each (a longer
// name from Names is left out, a longer DDM thread name cut). Every event gets an ID, one
// more than the VM's previous one; a history's first ID follows the time
// it was created in microseconds, so that IDs keep increasing across
// proxy restarts and a cursor from an earlier run is known to be stale.
// A reader holds a cursor, the ID of the last event it has (0: none), and
// reads what follows it (Read); when the events after its cursor are no
// longer all kept, or the cursor is not of this history, Read says so
// (Reset) and continues from the oldest event kept.
//
//	f := feed.New(feed.Config{VMOf: vmName, Names: watcher})
//	hooks.Observers = append(hooks.Observers, f)
//	sub := f.Subscribe(vm)
//	defer f.Unsubscribe(sub)
//	evs, reset := f.Read(vm, cursor, buf[:0], cap(buf))
//	<-sub.Wake() // more events
//
// Observe costs a comparison and an atomic load for the packets it does
// not read (all but events; BenchmarkObserve: about 3 ns). An event is decoded into the session's reused jdwp.Composite
// and copied into the ring's records (a class signature into the record's
// own buffer, reused): no allocation once the ring's records have grown
// their buffers, whether or not anyone reads. Readers pay for their JSON.
package feed
