package feed

import (
	"strconv"
	"time"
)

// Kind is what an event of the feed is about.
type Kind uint8

// The kinds of events. JDWP events are those the VM sent the debugger,
// one feed event per event of the composite.
const (
	// KindSessionStart and KindSessionEnd: a debugger session through the
	// proxy started or ended (Event.Session is its ID; Note says why it
	// ended, when it failed).
	KindSessionStart Kind = iota + 1
	KindSessionEnd
	// KindVMStart (with the thread that started the VM) and KindVMDeath.
	KindVMStart
	KindVMDeath
	// KindStop: a thread stopped at a location, by an event that stops
	// (jdwp.EventKind.Locatable) in a composite that suspends: a
	// breakpoint, a step, an exception, a method entry or exit, a
	// watchpoint or a monitor event (Event.Event names it).
	KindStop
	// KindThreadStart and KindThreadDeath: JDWP THREAD_START, THREAD_DEATH.
	KindThreadStart
	KindThreadDeath
	// KindClassPrepare: a class was prepared (Event.Signature).
	KindClassPrepare
	// KindClassUnload: a class was unloaded (Event.Signature).
	KindClassUnload
	// KindEvent: any other JDWP event, such as a locatable event whose
	// composite did not suspend (a tracer's method entry with policy NONE).
	KindEvent
	// KindDDMThreadStart, KindDDMThreadRename, KindDDMThreadDeath: the
	// VM's DDM thread notifications (THCR, THNM, THDE), with the DDM
	// thread ID (not a JDWP threadID) and name.
	KindDDMThreadStart
	KindDDMThreadRename
	KindDDMThreadDeath

	numKinds
)

var kindNames = [numKinds]string{"", "session_start", "session_end", "vm_start", "vm_death", "stop",
	"thread_start", "thread_death", "class_prepare", "class_unload", "event",
	"ddm_thread_start", "ddm_thread_rename", "ddm_thread_death"}

func (k Kind) String() string {
	if k < numKinds && k != 0 {
		return kindNames[k]
	}
	return "unknown"
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name; an unknown name is kind 0, so that a
// reader of a later version's kinds goes on.
func (k *Kind) UnmarshalText(b []byte) error {
	*k = 0
	for i, n := range kindNames {
		if i != 0 && n == string(b) {
			*k = Kind(i)
		}
	}
	return nil
}

// Event is one event of the feed, as JSON readers get it (web/API.md
// documents it). IDs are hexadecimal strings ("0x1a2"), as elsewhere in
// the API; fields that do not apply to the kind are absent.
type Event struct {
	ID   uint64    `json:"id"`
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
	// Session is the ID of the debugger session the event came through
	// (0 for DDM thread changes, which come from the DDM tap).
	Session uint64 `json:"session,omitempty"`
	// Event is the JDWP event kind ("BREAKPOINT"), Suspend the
	// composite's suspend policy ("ALL"), RequestID the event request's
	// ID (0 for automatically generated events).
	Event     string `json:"event,omitempty"`
	Suspend   string `json:"suspend,omitempty"`
	RequestID int32  `json:"request_id,omitempty"`
	// Thread is the JDWP threadID; ThreadName its name when the
	// debugger's conversation showed it.
	Thread     HexID  `json:"thread,omitempty"`
	ThreadName string `json:"thread_name,omitempty"`
	// Location is where the thread is.
	Location *Location `json:"location,omitempty"`
	// For class prepares and unloads: the type's tag ("CLASS") and ID
	// (prepares), its JNI signature ("Lcom/x/Main;", at most MaxSignature
	// bytes: SignatureCut says it was longer) and status bits.
	TypeTag      string `json:"type_tag,omitempty"`
	TypeID       HexID  `json:"type_id,omitempty"`
	Signature    string `json:"signature,omitempty"`
	SignatureCut bool   `json:"signature_cut,omitempty"`
	Status       int32  `json:"status,omitempty"`
	// DDMThread and Name: a DDM thread change's thread ID and name.
	DDMThread uint32 `json:"ddm_thread,omitempty"`
	Name      string `json:"name,omitempty"`
	// Note says why a session ended, when it failed.
	Note string `json:"note,omitempty"`
}

// Location is a JDWP location, with names where the debugger's
// conversation showed them.
type Location struct {
	TypeTag string `json:"type_tag"`
	Class   HexID  `json:"class"`
	Method  HexID  `json:"method"`
	// Index is the code index, signed: a native method's location has
	// index -1.
	Index int64 `json:"index"`
	// ClassSignature, Method name and source Line, when known (Line 0:
	// unknown).
	ClassSignature string `json:"class_signature,omitempty"`
	MethodName     string `json:"method_name,omitempty"`
	Line           int32  `json:"line,omitempty"`
}

// HexID is a JDWP ID, written in JSON as a hexadecimal string ("0x1a2").
type HexID uint64

// MarshalText writes "0x" and the ID in hexadecimal.
func (id HexID) MarshalText() ([]byte, error) {
	return strconv.AppendUint([]byte("0x"), uint64(id), 16), nil
}

// UnmarshalText reads what MarshalText writes.
func (id *HexID) UnmarshalText(b []byte) error {
	s := string(b)
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	v, err := strconv.ParseUint(s, 16, 64)
	*id = HexID(v)
	return err
}

// event is the record as a reader gets it.
func (r *record) event() Event {
	e := Event{ID: r.id, Time: r.at, Kind: r.kind, Session: r.session, RequestID: r.req, Thread: HexID(r.thread),
		ThreadName: r.names.Thread, DDMThread: r.ddmID, Name: r.ddmName, Note: r.note}
	if r.ev != 0 {
		e.Event = r.ev.String()
		e.Suspend = r.policy.String()
	}
	if r.hasLoc {
		e.Location = &Location{TypeTag: r.loc.TypeTag.String(), Class: HexID(r.loc.Class), Method: HexID(r.loc.Method),
			Index: int64(r.loc.Index), ClassSignature: r.names.Class, MethodName: r.names.Method, Line: r.names.Line}
	}
	if r.kind == KindClassPrepare || r.kind == KindClassUnload {
		e.Signature, e.SignatureCut = string(r.sig), r.sigCut
	}
	if r.kind == KindClassPrepare {
		e.TypeTag, e.TypeID, e.Status = r.tag.String(), HexID(r.typeID), int32(r.status)
	}
	return e
}
