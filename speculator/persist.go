package speculator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/keyable"
	"github.com/rs/zerolog"
)

// profile is what sessions of one debugger on one kind of VM learned, for
// the next attach: the attach sequence by signature and name (attach.go),
// and the learner's state that holds no ID: which commands the debugger
// asks, the rules' usage and waste, the frames rule and depths, the array
// range, and the stop templates about the stopped thread alone. It is
// kept in memory across the sessions of a Speculator and optionally in a
// file (Config.LearnFile). Nothing in it is an ID.
type profile struct {
	VM         []jdwp.Cmd       `json:"vm,omitempty"`     // VM-wide commands without parameters asked at attach
	Sigs       []string         `json:"sigs,omitempty"`   // signatures the debugger looked up (ClassesBySignature) at attach
	Class      []classCmd       `json:"class,omitempty"`  // class commands asked at attach
	Method     []methodCmd      `json:"method,omitempty"` // method commands asked at attach
	AttachUse  float64          `json:"attach_use"`       // used/sent of the last attach's own commands
	Asked      []jdwp.Cmd       `json:"asked,omitempty"`  // every cacheable command the debugger asked
	Ratio      []float64        `json:"ratio,omitempty"`  // learner.ratio by rule kind
	Waste      float64          `json:"waste"`
	FramesRule int32            `json:"frames_rule"`
	ValueDepth uint64           `json:"value_depth"`
	ThisDepth  uint64           `json:"this_depth"`
	ArrFirst   int32            `json:"arr_first"`
	ArrLen     int32            `json:"arr_len"`
	ArrKnown   bool             `json:"arr_known"`
	ArrReads   []arrRead        `json:"arr_reads,omitempty"`   // learner.arrReads (ArrFirst, ArrLen: the first, for older readers)
	FieldOrder fieldOrder       `json:"field_order,omitempty"` // learner.fieldOrder (shapes.go)
	ReadLevels []uint8          `json:"read_levels,omitempty"` // learner.readLevel, if known (predict_values.go)
	Sparse     []uint8          `json:"sparse,omitempty"`      // learner.sparse: by kind of read, a bit per level
	ShownFacts factsListing     `json:"shown_facts,omitempty"` // learner.shownFacts
	Templates  []relTmpl        `json:"templates,omitempty"`
	Slots      []slotsOf        `json:"slots,omitempty"`       // learner.slots by method name
	WB         *wbProfile       `json:"wb,omitempty"`          // write-behind's (writebehind_profile.go)
	PrepClass  []jdwp.Cmd       `json:"prep_class,omitempty"`  // asked of a prepared class at a CLASS_PREPARE stop (predict_prepare.go)
	PrepMethod []jdwp.Cmd       `json:"prep_method,omitempty"` // asked of its methods there
	PrepVM     []jdwp.Cmd       `json:"prep_vm,omitempty"`     // asked of the VM's state there (AllThreads)
	PrepRead   []int8           `json:"prep_read,omitempty"`   // prepareRule.resolves, by matchKind
	Shapes     []objShape       `json:"shapes,omitempty"`      // fields read of objects, by type (shapes.go)
	Learned    []learnedTmpl    `json:"learned,omitempty"`     // the learned rules' templates that hold no ID (learned_profile.go)
	Lookups    int              `json:"lookups,omitempty"`     // the debugger's lookups by name at attach (snapshot.go)
	SnapBytes  int              `json:"snap_bytes,omitempty"`  // the size of the VM's class snapshot (snapshot.go)
	Sets       []jdwp.EventKind `json:"sets,omitempty"`        // the event kinds of the session's first Sets (firstSets)
	Setup      []jdwp.EventKind `json:"setup,omitempty"`       // the debugger's setup (firstSets.setupKinds)
}

// slotsOf is the slots the debugger asked of a method's frames (at one
// code index if Exact): StackFrame.GetValues' parameters after the frame.
type slotsOf struct {
	Sig   string `json:"sig"`
	Name  string `json:"name"`
	MSig  string `json:"msig"`
	Index uint64 `json:"index"`
	Exact bool   `json:"exact"`
	Tail  []byte `json:"tail"`
}

// classCmd is a class command of the attach, by the class's signature.
type classCmd struct {
	Sig  string          `json:"sig"`
	Set  jdwp.CommandSet `json:"set"`
	Cmd  uint8           `json:"cmd"`
	Stop bool            `json:"stop,omitempty"` // first asked at the first stop (attach.replay)
}

// methodCmd is a method command of the attach, by class signature and
// method name and signature.
type methodCmd struct {
	Sig  string          `json:"sig"`
	Name string          `json:"name"`
	MSig string          `json:"msig"`
	Set  jdwp.CommandSet `json:"set"`
	Cmd  uint8           `json:"cmd"`
	Stop bool            `json:"stop,omitempty"` // first asked at the first stop (attach.replay)
}

// relTmpl is a stop template about the stopped thread alone (its first
// parameter, zero here) or without parameters; Ints are the int
// parameters after the thread (Frames' start and length).
type relTmpl struct {
	Set  jdwp.CommandSet `json:"set"`
	Cmd  uint8           `json:"cmd"`
	Rel  bool            `json:"rel"`
	Ints []int32         `json:"ints,omitempty"`
}

// size is the length of the attach sequence.
func (p *profile) size() int { return len(p.VM) + len(p.Sigs) + len(p.Class) + len(p.Method) }

func (p *profile) addVM(c jdwp.Cmd) {
	for _, v := range p.VM {
		if v == c {
			return
		}
	}
	p.VM = append(p.VM, c)
}

// addClass adds e, once (asked first at the attach or at the first stop).
func (p *profile) addClass(e classCmd) {
	for _, v := range p.Class {
		if v.Sig == e.Sig && v.Set == e.Set && v.Cmd == e.Cmd {
			return
		}
	}
	p.Class = append(p.Class, e)
}

// addMethod adds e, once.
func (p *profile) addMethod(e methodCmd) {
	for _, v := range p.Method {
		if v.Sig == e.Sig && v.Name == e.Name && v.MSig == e.MSig && v.Set == e.Set && v.Cmd == e.Cmd {
			return
		}
	}
	p.Method = append(p.Method, e)
}

// merge adds old's attach sequence to p's.
func (p *profile) merge(old *profile) {
	for _, c := range old.VM {
		p.addVM(c)
	}
	for _, s := range old.Sigs {
		p.addSig(s)
	}
	for _, e := range old.Class {
		p.addClass(e)
	}
	for _, e := range old.Method {
		p.addMethod(e)
	}
}

// vmCmds is the profile's VM-wide commands other than the first wave's.
func (p *profile) vmCmds() []jdwp.Cmd {
	var out []jdwp.Cmd
	for _, c := range p.VM {
		first := false
		for _, d := range defaultPrefetch {
			first = first || c == d
		}
		if info, ok := keyable.Lookup(c); ok && !first && info.Tier != keyable.TierNone {
			out = append(out, c)
		}
	}
	return out
}

// signatures is every class signature of the attach sequence.
func (p *profile) signatures() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range p.Sigs {
		add(s)
	}
	for _, e := range p.Class {
		add(e.Sig)
	}
	for _, e := range p.Method {
		add(e.Sig)
	}
	return out
}

func (p *profile) addSig(sig string) {
	for _, s := range p.Sigs {
		if s == sig {
			return
		}
	}
	p.Sigs = append(p.Sigs, sig)
}

// profileKey names the profile of a debugger (its first command) on a
// kind of VM (its Version reply).
func profileKey(version []byte, first jdwp.Cmd) string {
	h := sha256.Sum256(version)
	return fmt.Sprintf("%s/%d.%d", hex.EncodeToString(h[:12]), first.Set, first.Cmd)
}

// maxProfiles bounds the profiles kept; maxProfileBytes bounds a learn
// file read back.
const (
	maxProfiles     = 64
	maxProfileBytes = 4 << 20
)

// profileStore keeps the profiles of a Speculator's sessions, and writes
// them to path (if not "") after each change.
type profileStore struct {
	path string
	log  zerolog.Logger
	mu   sync.Mutex // guards m
	m    map[string]*profile
}

func newProfileStore(path string, log zerolog.Logger) *profileStore {
	ps := &profileStore{path: path, log: log, m: map[string]*profile{}}
	if path == "" {
		return ps
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		log.Warn().Err(err).Str("path", path).Msg("cannot read the learn file; starting without it")
	default:
		m, err := parseProfiles(b)
		if err != nil {
			log.Warn().Err(err).Str("path", path).Msg("learn file does not parse; starting without it")
		} else {
			ps.m = m
		}
	}
	return ps
}

// get returns a copy of the profile stored under key, or nil.
func (ps *profileStore) get(key string) *profile {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[key]
	if !ok {
		return nil
	}
	c := *p
	return &c
}

// put stores p under key (a new session's profile replaces the old).
func (ps *profileStore) put(key string, p *profile) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.m[key]; !ok && len(ps.m) >= maxProfiles {
		for k := range ps.m { // any one: profiles are cheap to learn again
			delete(ps.m, k)
			break
		}
	}
	ps.m[key] = p
	if ps.path == "" {
		return
	}
	if err := writeProfiles(ps.path, ps.m); err != nil {
		ps.log.Warn().Err(err).Str("path", ps.path).Msg("cannot write the learn file")
	}
}

// writeProfiles writes m to path atomically, readable by its owner only.
func writeProfiles(path string, m map[string]*profile) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".learn-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// parseProfiles reads a learn file, keeping only well-formed profiles
// within the bounds a session would have kept.
func parseProfiles(b []byte) (map[string]*profile, error) {
	if len(b) > maxProfileBytes {
		return nil, fmt.Errorf("learn file larger than %d bytes", maxProfileBytes)
	}
	var m map[string]*profile
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := map[string]*profile{}
	for k, p := range m {
		if p == nil || len(out) >= maxProfiles || !p.valid() {
			continue
		}
		out[k] = p
	}
	return out, nil
}

// valid says whether a profile read back is within bounds: no more
// commands than a session records, only cacheable commands, the learner's
// ratio length (or fewer).
func (p *profile) valid() bool {
	if len(p.VM)+len(p.Sigs)+len(p.Class)+len(p.Method) > maxAttachCmds || len(p.Templates) > maxTemplates ||
		len(p.Asked) > 256 || len(p.Ratio) > int(numKinds) || len(p.ArrReads) > maxArrReads ||
		len(p.ReadLevels) > int(numReads) || p.FieldOrder >= numOrders || len(p.Sets) > len(firstSets{}.kinds) || len(p.Setup) > len(bookkeepingKinds) || slices.ContainsFunc(p.ReadLevels, func(l uint8) bool { return l > maxValueLevel+1 }) {
		return false
	}
	if p.ShownFacts > factsNotListed || len(p.Sparse) > int(numReads) || slices.ContainsFunc(p.Sparse, func(b uint8) bool { return b >= 1<<(maxValueLevel+1) }) ||
		len(p.PrepRead) > int(numMatchKinds) || slices.ContainsFunc(p.PrepRead, func(r int8) bool { return r < -1 || r > 1 }) {
		return false
	}
	if !p.WB.valid() || !prepareValid(p.PrepClass) || !prepareValid(p.PrepMethod) || !prepareValid(p.PrepVM) || !shapesValid(p.Shapes) || !learnedValid(p.Learned) {
		return false
	}
	ok := func(c jdwp.Cmd) bool { _, ok := keyable.Lookup(c); return ok }
	for _, c := range p.VM {
		if !ok(c) {
			return false
		}
	}
	for _, e := range p.Class {
		if !ok(jdwp.Cmd{Set: e.Set, Cmd: e.Cmd}) {
			return false
		}
	}
	for _, e := range p.Method {
		if !ok(jdwp.Cmd{Set: e.Set, Cmd: e.Cmd}) {
			return false
		}
	}
	for _, t := range p.Templates {
		if !ok(jdwp.Cmd{Set: t.Set, Cmd: t.Cmd}) || len(t.Ints) > 2 {
			return false
		}
	}
	for _, e := range p.Slots {
		if len(e.Tail) > keyable.MaxParams || len(e.Tail) < 4 || !e.Exact && e.Index != 0 {
			return false
		}
	}
	return p.FramesRule >= -1 && len(p.Slots) <= maxLearned && p.Lookups >= 0 && p.SnapBytes >= 0
}
