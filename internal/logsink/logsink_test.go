package logsink

import (
	"strings"
	"testing"
	"time"
)

func TestSinkKeepsAndWaits(t *testing.T) {
	s := New()
	s.Write([]byte(`{"message":"a","n":1}` + "\n"))
	s.Write([]byte("not json"))
	go func() { // while Wait waits, or before: either way it finds them
		s.Write([]byte(`{"message":"b","n":2}`))
		s.Write([]byte(`{"message":"b","n":3}`))
	}()
	if r := s.Wait(t, "of b", 2, 10*time.Second, Message("b")); r["n"] != float64(2) {
		t.Errorf("Wait returned %v, want the first of the two", r)
	}
	if n := s.Count(Message("a")); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
	if r := s.Find(Message("c")); r != nil {
		t.Errorf("Find of no such record = %v", r)
	}
	if got := s.String(); strings.Count(got, "\n") != 4 || !strings.Contains(got, "not json\n") {
		t.Errorf("String = %q, want the four lines as written", got)
	}
}
