package jdwptest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
)

// JavaBuild compiles the bundled Java debuggees and drivers (bench/javavm).
// Without a JDK it skips the test, or fails it under CI=true (see
// jdktest.RequireJDK).
func JavaBuild(t testing.TB) *javavm.Build {
	t.Helper()
	jdktest.RequireJDK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := javavm.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StartJava starts the debuggee main of b, a real JVM with a JDWP agent,
// stopped when the test ends.
func StartJava(t testing.TB, b *javavm.Build, main string) *javavm.VM {
	t.Helper()
	vm, err := javavm.Start(context.Background(), b, main, javavm.VMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	return vm
}

// MedianStep is the median step wall time over r's steady stops.
func MedianStep(r *javavm.DriverResult) time.Duration {
	var v []float64
	for _, s := range r.Steady() {
		v = append(v, s.MS)
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return msDuration(v[n/2])
	}
	return msDuration((v[n/2-1] + v[n/2]) / 2)
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
