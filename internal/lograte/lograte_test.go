package lograte

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestAllowOncePerIntervalPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(time.Minute, 2)
		if ok, n, as := l.Allow("a"); !ok || n != 0 || as != "a" {
			t.Fatalf("first a: %v %d %q", ok, n, as)
		}
		for range 5 {
			if ok, _, _ := l.Allow("a"); ok {
				t.Fatal("a again within the interval was allowed")
			}
		}
		if ok, _, as := l.Allow("b"); !ok || as != "b" {
			t.Fatalf("first b: %v %q", ok, as)
		}
		// A third key is over the bound: it counts as Other.
		if ok, _, as := l.Allow("c"); !ok || as != Other {
			t.Fatalf("c: %v %q, want allowed as %q", ok, as, Other)
		}
		if ok, _, as := l.Allow("d"); ok || as != Other {
			t.Fatalf("d: %v %q, want held back as %q", ok, as, Other)
		}
		time.Sleep(time.Minute)
		if ok, n, as := l.Allow("a"); !ok || n != 5 || as != "a" {
			t.Fatalf("a after the interval: %v %d %q, want allowed with 5 held back", ok, n, as)
		}
		// b's and Other's intervals are over: a new key takes one's place.
		if ok, n, as := l.Allow("e"); !ok || n != 0 || as != "e" {
			t.Fatalf("e after the interval: %v %d %q", ok, n, as)
		}
	})
}
