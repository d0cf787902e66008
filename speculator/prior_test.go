package speculator

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

var writePrior = flag.Bool("write-prior", false, "regenerate prior.json from learning sessions of the JDI driver with a real VM (go generate)")

// TestWritePrior generates prior.json (go generate): two attaches of the
// bench's IDE-like JDI driver to new Deep VMs through one speculator, the
// profile they leave stripped of everything that names a class outside
// the JDK; and the same of its vscode-like driver over Eclipse's JDI on a
// 30 ms link, whose Sets and stop templates only are kept (Stops).
func TestWritePrior(t *testing.T) {
	if !*writePrior {
		t.Skip("run with -write-prior to regenerate prior.json")
	}
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sp := New(Config{}, zerolog.Nop(), nil)
	sp.noPrior, sp.snapAll = true, true // a snapshot, for its size
	attachOnce(t, ctx, b, sp)
	attachOnce(t, ctx, b, sp)
	if len(sp.profiles.m) != 1 {
		t.Fatalf("%d profiles learned, want 1", len(sp.profiles.m))
	}
	var f priorFile
	for key, p := range sp.profiles.m {
		f.Profile = p
		var hash string
		if _, err := fmt.Sscanf(strings.Replace(key, "/", " ", 1), "%s %d.%d", &hash, &f.First.Set, &f.First.Cmd); err != nil {
			t.Fatalf("profile key %q: %v", key, err)
		}
	}
	f.Profile.stripToGeneric()
	if javavm.EclipseJDI() == "" {
		t.Fatalf("Eclipse's JDI is not installed (%v): the prior would have no stop templates for it", javavm.EclipseJDIJars)
	}
	eclipse := New(Config{}, zerolog.Nop(), nil)
	eclipse.noPrior = true
	// Over a link as slow as those it is for: java-debug's engine decides
	// what it reads from the latency it measures (async above 15 ms, no
	// invocations for its Variables view above 10 ms), and so does the
	// driver that does what it does.
	attachOnceAs(t, ctx, b, eclipse, javavm.ProfileVSCodeLike, 30*time.Millisecond)
	attachOnceAs(t, ctx, b, eclipse, javavm.ProfileVSCodeLike, 30*time.Millisecond)
	for _, p := range eclipse.profiles.m {
		p.stripToGeneric()
		f.Stops = append(f.Stops, p.stopsPart())
	}
	// Whether a JDI's debugger lists the type facts of objects it shows
	// and does not open shows only on a program with such objects, which
	// Deep's stops have none of: one attach of each driver to BigApp,
	// through a speculator of its own, tells.
	f.Profile.ShownFacts = shownFactsOf(t, ctx, b, javavm.ProfileIdeaLike, 2*time.Millisecond)
	eclipseFacts := shownFactsOf(t, ctx, b, javavm.ProfileVSCodeLike, 30*time.Millisecond)
	for _, p := range f.Stops {
		p.ShownFacts = eclipseFacts
	}
	f.VM = vmNameOf(t, ctx, b)
	out, err := json.MarshalIndent(&f, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if parsePrior(out) == nil {
		t.Fatalf("the generated prior does not read back: %s", out)
	}
	if err := os.WriteFile("prior.json", append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shownFactsOf is the shownFacts a fresh speculator (no prior) learns in
// one attach of the driver of profile to BigApp.
func shownFactsOf(t *testing.T, ctx context.Context, b *javavm.Build, profile string, rtt time.Duration) factsListing {
	t.Helper()
	sp := New(Config{}, zerolog.Nop(), nil)
	sp.noPrior = true
	attachOnceTo(t, ctx, b, sp, javavm.BigApp, profile, rtt)
	for _, p := range sp.profiles.m {
		return p.ShownFacts
	}
	t.Fatalf("%s: no profile learned", profile)
	return factsUnknown
}

// TestPriorNamesOnlyTheJDK checks the embedded prior: it parses, is
// within a profile's bounds, and names no class or method outside the
// JDK's own packages.
func TestPriorNamesOnlyTheJDK(t *testing.T) {
	var f priorFile
	if err := json.Unmarshal(priorJSON, &f); err != nil || f.Profile == nil {
		t.Fatalf("prior.json does not parse: %v", err)
	}
	if builtinPrior == nil || !f.Profile.valid() {
		t.Fatal("the embedded prior is not taken")
	}
	p := f.Profile
	names := p.signatures()
	for _, e := range p.Slots {
		names = append(names, e.Sig)
	}
	for _, e := range p.Shapes {
		names = append(names, e.Sig)
	}
	for _, s := range names {
		if !jdkSignature(s) {
			t.Errorf("the prior names %q, not a class of java.*, jdk.* or sun.*", s)
		}
	}
	if p.WB != nil {
		t.Error("the prior carries write-behind rules, proven per VM build only")
	}
	for _, s := range []string{"LDeep;", "Lcom/example/App;", "[LDeep$Node;", "Ljavax/swing/JFrame;", "Ljava/lang/String"} {
		if jdkSignature(s) {
			t.Errorf("jdkSignature(%q) = true, want false", s)
		}
	}
	for _, s := range []string{"Ljava/lang/String;", "[[Ljdk/internal/misc/Unsafe;", "[I", "Lsun/misc/Signal;"} {
		if !jdkSignature(s) {
			t.Errorf("jdkSignature(%q) = false, want true", s)
		}
	}
}

// TestRealVMFirstAttachWithPrior attaches a real JDI debugger to a new VM
// through a fresh speculator (no learn file, no earlier session) twice:
// with the built-in prior and without it (the old behaviour). The prior's
// first attach must need no more serial round trips to its first
// breakpoint stop than the old one.
func TestRealVMFirstAttachWithPrior(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	old := New(Config{}, zerolog.Nop(), nil)
	old.noPrior = true
	without, _ := attachOnce(t, ctx, b, old)
	learned, _ := attachOnce(t, ctx, b, old)
	with, _ := attachOnce(t, ctx, b, New(Config{}, zerolog.Nop(), nil))
	t.Logf("serial round trips to the first stop of a fresh proxy: without the prior %d, with it %d (a learned second attach: %d)",
		without, with, learned)
	if with > without {
		t.Fatalf("the first attach with the prior took %d serial round trips to its first stop, without it %d", with, without)
	}
}

// TestRealVMFirstStopFramesOfAnotherLength: through a fresh proxy, the
// IDE-like driver (OpenJDK's JDI, as IntelliJ) asks at its first stop
// whether each frame's method is obsolete; the prior read that of every
// frame of a Frames command of another length (all frames; this debugger
// lists 20), and the proxy reads it ahead all the same: what a debugger
// reads of a frame does not depend on how many it listed at once. Fails
// with the frames fed only to the templates of the Frames command that
// fetched them (learnedRules.frame): the second frame's read is then
// forwarded, a round trip on the first stop's critical path.
func TestRealVMFirstStopFramesOfAnotherLength(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, bp := attachOnce(t, ctx, b, New(Config{}, zerolog.Nop(), nil))
	for _, l := range bp.Path {
		if l.Name == jdwp.CmdMethodIsObsolete.String() && l.Served == "forwarded" {
			t.Fatalf("a frame method's IsObsolete was forwarded on the first stop's critical path: %+v", bp.Path)
		}
	}
}

// vmNameOf asks a new Deep VM its Version: the vmName in it.
func vmNameOf(t *testing.T, ctx context.Context, b *javavm.Build) string {
	vm, err := javavm.Start(ctx, b, "Deep", javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Stop()
	d, err := jdwptest.Attach(vm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := vmName(p.Body())
	if name == "" {
		t.Fatalf("Version reply %x names no VM", p.Body())
	}
	return name
}

// TestRealVMEclipsePrepareStopWithPrior: VS Code's engine (Eclipse's JDI,
// the vscode-like driver) through a fresh proxy. Its class prepare
// requests suspend all (java-debug leaves them at JDI's default), and its
// JDI lists the VM's threads as it resumes such a stop; the prior's
// Eclipse profile has that list read ahead at the first one too, so no
// forwarded AllThreads lies on the way to the first breakpoint. Fails with
// the prepare rule taking only the profile of the debugger's first
// command (the prior's, OpenJDK's, whose JDI reads no threads there).
// Nor is the stopped thread's suspend count, which java-debug reads last
// before it resumes: the profile's read of it is replayed at the first
// breakpoint though the prepare stops left templates of their own (fails
// with learnedRules.wave replaying it only with no templates).
func TestRealVMEclipsePrepareStopWithPrior(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, bp := attachOnceAs(t, ctx, b, New(Config{}, zerolog.Nop(), nil), javavm.ProfileVSCodeLike, 5*time.Millisecond)
	prepared := false
	for _, l := range bp.Path {
		prepared = prepared || strings.HasSuffix(l.Name, "CLASS_PREPARE")
		if l.Name == jdwp.CmdVirtualMachineAllThreads.String() && l.Served == "forwarded" {
			t.Errorf("the debugger's thread list forwarded on the way to its first stop: %+v", bp.Path)
		}
		if l.Name == jdwp.CmdThreadReferenceSuspendCount.String() && l.Served == "forwarded" {
			t.Errorf("the stopped thread's suspend count forwarded at the first stop: %+v", bp.Path)
		}
	}
	if !prepared {
		t.Fatalf("no class prepare stop on the way to the first breakpoint: %+v", bp.Path)
	}
}
