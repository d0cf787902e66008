package speculator

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// The prior: what a session learns about the attach of a JDI-based
// debugger (OpenJDK's JDI, Eclipse's, IntelliJ's fork), shipped with the
// proxy so that the first session of a fresh proxy (no learn file, no
// earlier session) attaches as a learned one would. JDI's attach is the
// same for every program: the ID sizes, version and capabilities; the
// VM-wide commands it asks once (threads, groups, class paths); what it
// reads of java.lang classes (Thread, ThreadGroup, String, Class) to show
// threads and values; what its debugger reads at a stop (the learned
// rules' templates: each thread's name and status, the frames, their
// methods, this and the locals, their types and strings). The prior holds
// only such facts: every class and method it names is the JDK's own
// (java.*, jdk.*, sun.*), never a user program's, nor a field by its
// position in one; no write-behind rule (those are proven per VM build,
// writebehind_profile.go); no usage ratios (how much of its speculation
// the learning session used is its own). Its stop templates are those of
// OpenJDK's JDI: a session takes them only if its debugger attached as
// that one did (learnedRules.take).
//
// It is generated from a real learning session of the bench's JDI driver
// (prior_test.go, go generate) and embedded. It is used for a debugger
// whose first command is the prior's (JDI's: IDSizes), and at a far end,
// on a VM of the family it was learned on (HotSpot: its vmName), when no
// learned profile of that debugger on that kind of VM exists; a
// learned profile, recorded by a session that began from the prior,
// refines and replaces it.

//go:generate go test -run TestWritePrior -write-prior .

//go:embed prior.json
var priorJSON []byte

// priorFile is prior.json: the debugger's first command, the name of the
// VM it was learned on (the Version reply's vmName: a VM family, any
// version), the profile, and the stop templates of the debuggers of other
// JDIs (Eclipse's), each with the Sets its JDI attached with, and how its
// debugger reads a stop's values (Asked, the array ranges, the field
// order; nothing else): a session takes the first whose Sets fit its own
// (learnedRules.take).
type priorFile struct {
	First   jdwp.Cmd   `json:"first"`
	VM      string     `json:"vm"`
	Profile *profile   `json:"profile"`
	Stops   []*profile `json:"stops,omitempty"`
}

// builtinPrior is the embedded prior, nil if it does not parse (a build
// without one attaches as before).
var builtinPrior = parsePrior(priorJSON)

func parsePrior(b []byte) *priorFile {
	var f priorFile
	if err := json.Unmarshal(b, &f); err != nil || f.VM == "" || f.Profile == nil || !f.Profile.valid() || !f.Profile.generic() {
		return nil
	}
	for i, p := range f.Stops {
		if p == nil || !p.valid() || !p.generic() || len(p.Sets) == 0 {
			return nil
		}
		f.Stops[i] = p.stopsPart()
	}
	return &f
}

// stopsPart is what of p a prior's Stops carry (priorFile): its JDI's
// first Sets, its debugger's setup and how it reads at stops, at class
// prepare stops too; nothing of its attach's commands or its rules'
// ratios.
func (p *profile) stopsPart() *profile {
	return &profile{Sets: p.Sets, Setup: p.Setup, Learned: p.Learned, Asked: p.Asked, ArrKnown: p.ArrKnown,
		ArrReads: p.ArrReads, FieldOrder: p.FieldOrder, ShownFacts: p.ShownFacts, PrepClass: p.PrepClass, PrepMethod: p.PrepMethod, PrepVM: p.PrepVM}
}

// generic reports whether every class and method p names is the JDK's
// own (jdkSignature), and no template reads a field by its position: a
// profile with nothing of a user program.
func (p *profile) generic() bool {
	for _, s := range p.signatures() {
		if !jdkSignature(s) {
			return false
		}
	}
	for _, e := range p.Slots {
		if !jdkSignature(e.Sig) {
			return false
		}
	}
	for _, e := range p.Shapes {
		if !jdkSignature(e.Sig) {
			return false
		}
	}
	for _, t := range p.Learned {
		if slices.ContainsFunc(t.Params, func(q learnedParam) bool { return q.Src == srcFields }) {
			return false // fields by their positions in a program's classes
		}
	}
	return p.WB == nil && len(p.Ratio) == 0 && len(p.ReadLevels) == 0
}

// vmName is the vmName of a Version reply body, "" if it does not parse.
func vmName(version []byte) string {
	r := jdwp.NewBodyReader(version, jdwp.IDSizes{})
	r.StringBytes()
	r.Int32()
	r.Int32()
	r.StringBytes()
	name := r.String()
	if r.Err() != nil {
		return ""
	}
	return name
}

// jdkSignature reports whether a type signature names a primitive, a
// class of the JDK's own packages (java.*, jdk.*, sun.*), or an array of
// either.
func jdkSignature(sig string) bool {
	s := strings.TrimLeft(sig, "[")
	if len(s) == 1 {
		return strings.Contains("ZBCSIJFD", s)
	}
	for _, pkg := range []string{"Ljava/", "Ljdk/", "Lsun/"} {
		if strings.HasPrefix(s, pkg) && strings.HasSuffix(s, ";") {
			return true
		}
	}
	return false
}

// priorFor returns a copy of the built-in prior for a debugger whose first
// command is first on a VM whose Version reply body is version, and its
// other JDIs' stop templates (not to be changed), or nil. A far end
// (split mode) takes it whatever its first command: that is whatever its
// near end forwarded first, not the debugger's (the near end answered
// that from the attach bundle).
func priorFor(first jdwp.Cmd, far bool, version []byte) (*profile, []*profile) {
	if builtinPrior == nil || builtinPrior.First != first && !far || vmName(version) != builtinPrior.VM {
		return nil, nil
	}
	c := *builtinPrior.Profile
	return &c, builtinPrior.Stops
}
