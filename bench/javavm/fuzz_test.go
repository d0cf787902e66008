package javavm

import (
	"bytes"
	"strings"
	"testing"
)

const sampleDriverOutput = `{"stop":0,"warmup":true,"ms":95.081,"burst_ms":43.407,"top":"Deep.work:36","digest":"fac30438596ca973044c4731e7767a6b6e332e024d56221c4e7f4216fd9366d3"}
{"stop":1,"warmup":false,"ms":16.4,"burst_ms":13.8,"top":"Deep.work:37","digest":"99f8c9b8d5c68710cff42861f452f52ab98ded8be4f8e0ed7f8becb6cff1c527","text":"thread main\n"}
{"summary":true,"stops":2,"measured":1,"median_ms":16.4,"median_burst_ms":13.8}
`

func TestParseDriverOutput(t *testing.T) {
	res, err := ParseDriverOutput(strings.NewReader(sampleDriverOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stops) != 2 || res.Stops[1].Text != "thread main\n" || res.Summary.Measured != 1 || res.MedianBurst() <= 0 {
		t.Fatalf("%+v", res)
	}
	for _, bad := range []string{
		"", // no summary
		sampleDriverOutput[:len(sampleDriverOutput)/2], // truncated
		strings.Replace(sampleDriverOutput, `"stop":1`, `"stop":3`, 1),
		strings.Replace(sampleDriverOutput, `"digest":"99f8`, `"digest":"`, 1),
		sampleDriverOutput + sampleDriverOutput,
		"not json\n",
	} {
		if _, err := ParseDriverOutput(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseDriverOutput(f *testing.F) {
	f.Add([]byte(sampleDriverOutput))
	f.Add([]byte(`{"summary":true}`))
	f.Add([]byte("{\"stop\":0}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseDriverOutput(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i, s := range res.Stops {
			if s.Index != i || len(s.Digest) != 64 {
				t.Fatalf("accepted stop %d: %+v", i, s)
			}
		}
	})
}

func TestParseListeningPort(t *testing.T) {
	out := []byte("junk\nListening for transport dt_socket at address: 40123\nListening for transport dt_socket at address: 5\n")
	if p, ok := ParseListeningPort(out); !ok || p != 40123 {
		t.Fatalf("got %d %v", p, ok)
	}
	if ps := parseListeningPorts(out); len(ps) != 2 || ps[1] != 5 {
		t.Fatalf("got %v", ps)
	}
	for _, bad := range []string{"", "Listening for transport dt_socket at address: 0", "Listening for transport dt_socket at address: 99999999999999999999"} {
		if p, ok := ParseListeningPort([]byte(bad)); ok {
			t.Errorf("%q: port %d", bad, p)
		}
	}
}

func FuzzParseListeningPort(f *testing.F) {
	f.Add([]byte("Listening for transport dt_socket at address: 40123\n"))
	f.Add([]byte("Listening for transport dt_socket at address: 70000"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, ok := ParseListeningPort(data); ok && (p <= 0 || p > 65535) {
			t.Fatalf("port %d", p)
		}
	})
}
