package main

// The far end's named users and audit log, with a real OpenJDK VM.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// auditKeys are the keys of every audit line.
var auditKeys = []string{"cmd", "detail", "event", "from", "session", "suppressed", "time", "user"}

// readAudit reads the audit log at path: each line must be a JSON object
// with exactly auditKeys.
func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !reflect.DeepEqual(keys, auditKeys) {
			t.Errorf("audit line %q: keys %v, want %v", sc.Text(), keys, auditKeys)
		}
		out = append(out, m)
	}
	return out
}

// readJSONLines reads a JSON Lines file.
func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: line %q: %v", path, line, err)
		}
		out = append(out, m)
	}
	return out
}

// auditHas says whether lines has one with every key and value of want.
func auditHas(lines []map[string]any, want map[string]any) bool {
	for _, l := range lines {
		ok := true
		for k, v := range want {
			ok = ok && l[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// TestSplitUsersAudit: two users with their own tokens attach through
// their near ends; their names are in the far end's log lines and in the
// audit log (0600, JSON Lines with fixed keys), with their attaches; a
// wrong token is refused and audited as a refusal; RedefineClasses,
// ClassType.SetValues and ClassType.InvokeMethod sent to a real VM each
// leave an audit line naming the user and the session.
func TestSplitUsersAudit(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	dir := t.TempDir()
	users, auditFile, journalFile := filepath.Join(dir, "users"), filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "far.jsonl")
	os.WriteFile(users, []byte("alice:alice-0123456789abcdef\nbob:bob-0123456789abcdef\n"), 0o600)
	tokens := map[string]string{}
	for _, name := range []string{"alice", "bob", "mallory"} {
		tokens[name] = filepath.Join(dir, name)
		os.WriteFile(tokens[name], []byte(name+"-0123456789abcdef\n"), 0o600)
	}
	// bob's VM connection, after alice's, is the agent's second: at the
	// port it listens on again, held.
	port := heldPort(t)
	startJVMAt(t, b, port, javavm.Shallow)
	far := startFarEnd(t, vmAddr(port), "--users-file", users, "--audit", auditFile, "--journal", journalFile)

	if code, _, raw := runToExit(t, "proxy", "--far", far.addr, "--listen", "127.0.0.1:0", "--token-file", tokens["mallory"]); code != exitError || !strings.Contains(raw, "refused the token") {
		t.Errorf("near end with a token nobody has: exit %d, want %d and a log saying the far end refused it:\n%s", code, exitError, raw)
	}

	// alice debugs (the VM, started suspended, sends VM_START to its
	// first debugger only); then bob attaches and leaves.
	alice := startNearEnd(t, far.addr, "--token-file", tokens["alice"])
	d := attach(t, alice.addr)
	d.idSizes()
	bp := d.breakAtMain(javavm.Shallow)
	class := bp.Location.Class

	// RedefineClasses with the class's own bytes.
	classBytes, err := os.ReadFile(filepath.Join(b.Classes, javavm.Shallow+".class"))
	if err != nil {
		t.Fatal(err)
	}
	w := d.writer()
	w.Int32(1)
	w.ReferenceTypeID(class)
	w.Int32(int32(len(classBytes)))
	w.Buf = append(w.Buf, classBytes...)
	d.call(jdwp.CmdVirtualMachineRedefineClasses, w.Buf)

	// ClassType.SetValues: Shallow.label = a new string.
	w = d.writer()
	w.String("audited")
	str := jdwp.NewBodyReader(d.call(jdwp.CmdVirtualMachineCreateString, w.Buf), d.sizes).ObjectID()
	w = d.writer()
	w.ReferenceTypeID(class)
	fr := jdwp.NewBodyReader(d.call(jdwp.CmdReferenceTypeFields, w.Buf), d.sizes)
	var label uint64
	for n := fr.Int32(); n > 0 && fr.Err() == nil; n-- {
		id, name, _, _ := fr.FieldID(), fr.String(), fr.String(), fr.Int32()
		if name == "label" {
			label = id
		}
	}
	if label == 0 {
		t.Fatalf("no field label in %s (%v)", javavm.Shallow, fr.Err())
	}
	w = d.writer()
	w.ReferenceTypeID(class)
	w.Int32(1)
	w.FieldID(label)
	w.ObjectID(str)
	d.call(jdwp.CmdClassTypeSetValues, w.Buf)

	// ClassType.InvokeMethod: String.valueOf(int) on the stopped thread.
	w = d.writer()
	w.String("Ljava/lang/String;")
	cr := jdwp.NewBodyReader(d.call(jdwp.CmdVirtualMachineClassesBySignature, w.Buf), d.sizes)
	if cr.Int32() != 1 {
		t.Fatal("java.lang.String not loaded once")
	}
	cr.Uint8()
	stringClass := cr.ReferenceTypeID()
	w = d.writer()
	w.ReferenceTypeID(stringClass)
	mr := jdwp.NewBodyReader(d.call(jdwp.CmdReferenceTypeMethods, w.Buf), d.sizes)
	var valueOf uint64
	for n := mr.Int32(); n > 0 && mr.Err() == nil; n-- {
		id, name, sig, _ := mr.MethodID(), mr.String(), mr.String(), mr.Int32()
		if name == "valueOf" && sig == "(I)Ljava/lang/String;" {
			valueOf = id
		}
	}
	if valueOf == 0 {
		t.Fatalf("no String.valueOf(int) (%v)", mr.Err())
	}
	w = d.writer()
	w.ReferenceTypeID(stringClass)
	w.ObjectID(bp.Thread)
	w.MethodID(valueOf)
	w.Int32(1)
	w.Value(jdwp.Value{Tag: jdwp.TagInt, Bits: 42})
	w.Int32(2) // INVOKE_SINGLE_THREADED
	ir := jdwp.NewBodyReader(d.call(jdwp.CmdClassTypeInvokeMethod, w.Buf), d.sizes)
	if v := ir.Value(); v.Tag != jdwp.TagString || ir.Err() != nil {
		t.Errorf("String.valueOf(42) returned %v (%v)", v, ir.Err())
	}
	d.conn.Close()
	far.logs.wait(t, "of alice's session end", 15*time.Second, func(rec map[string]any) bool {
		return rec["user"] == "alice" && rec["closed_by"] != nil
	})
	bob := startNearEnd(t, far.addr, "--token-file", tokens["bob"])
	db := attach(t, bob.addr)
	db.idSizes()
	db.conn.Close()
	far.logs.wait(t, "of bob's session end", 15*time.Second, func(rec map[string]any) bool {
		return rec["user"] == "bob" && rec["closed_by"] != nil
	})

	aliceSession := far.logs.Find(func(rec map[string]any) bool { return rec["user"] == "alice" && rec["session"] != nil })
	if aliceSession == nil {
		t.Fatalf("no far end log line of alice's session:\n%s", far.logs)
	}

	far.stop() // its sessions' ends are recorded by then
	fi, err := os.Stat(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("audit log mode %04o, want 0600", perm)
	}
	lines := readAudit(t, auditFile)
	session := aliceSession["session"]
	for _, want := range []map[string]any{
		{"event": "refused", "detail": "unauthorized", "from": "127.0.0.1", "user": ""},
		{"event": "attach", "user": "bob"},
		{"event": "detach", "user": "bob"},
		{"event": "attach", "user": "alice", "session": session},
		{"event": "command", "user": "alice", "session": session, "cmd": "EventRequest.Set", "detail": "BREAKPOINT, suspend ALL"},
		{"event": "command", "user": "alice", "session": session, "cmd": "VirtualMachine.RedefineClasses"},
		{"event": "command", "user": "alice", "session": session, "cmd": "ClassType.SetValues"},
		{"event": "command", "user": "alice", "session": session, "cmd": "ClassType.InvokeMethod"},
	} {
		if !auditHas(lines, want) {
			t.Errorf("no audit line with %v", want)
		}
	}
	for _, l := range lines {
		if l["event"] == "command" && (l["cmd"] == "VirtualMachine.Resume" || l["cmd"] == "ReferenceType.Fields" || strings.HasPrefix(l["cmd"].(string), "CommandSet(")) {
			t.Errorf("audit line for a command that changes nothing: %v", l)
		}
	}
	// The far end's journal names each session's user.
	var starts []string
	for _, rec := range readJSONLines(t, journalFile) {
		if rec["type"] == "session_start" {
			starts = append(starts, fmt.Sprint(rec["session"], " ", rec["user"]))
		}
	}
	if want := []string{fmt.Sprint(session, " alice"), fmt.Sprint(session.(float64)+1, " bob")}; !reflect.DeepEqual(starts, want) {
		t.Errorf("the far end's journal's session starts %q, want %q", starts, want)
	}
	if t.Failed() {
		t.Logf("audit log:\n%v\nfar end log:\n%s", lines, far.logs)
	}
}

// TestUsersTunnelUsage: the flags of users, audit and tunnel refuse what
// cannot work, at start, with exit 2 and a message saying why.
func TestUsersTunnelUsage(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeTLSFiles(t, dir, "far")
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), mode)
		return p
	}
	certUsers := write("cert-users", "carol:sha256:"+strings.Repeat("ab", 32)+"\n", 0o600)
	openUsers := write("open-users", "alice:alice-0123456789abcdef\n", 0o644)
	token := write("token", "alice-0123456789abcdef\n", 0o600)
	users := write("users", "alice:alice-0123456789abcdef\n", 0o600)
	openAudit := write("audit.jsonl", "", 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"far", "--vm", "127.0.0.1:1", "--users-file", certUsers}, "give --tls-cert and --tls-key"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--users-file", certUsers, "--tls-cert", cert, "--tls-key", key, "--peer-cert", cert}, "leave --peer-cert out"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--users-file", openUsers}, "chmod 600"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--users-file", users, "--token-file", token}, "also a user's"},
		{[]string{"far", "--vm", "127.0.0.1:1", "--audit", openAudit}, "chmod 600"},
		{[]string{"proxy", "--vm", "127.0.0.1:1", "--far-tunnel", "ssh -N host"}, "goes with --far"},
		{[]string{"proxy", "--far", "127.0.0.1:2", "--far-tunnel", "kubectl port-forward pod/app 8720 | tee log"}, "without a shell"},
		{[]string{"proxy", "--far", "127.0.0.1:2", "--far-tunnel", "ssh 'host"}, "unterminated"},
		{[]string{"proxy", "--far", "127.0.0.1:2", "--far-tunnel", "no-such-tunnel-command -L 1:2"}, "executable file not found"},
	} {
		code, out, errOut := runCapture(append(c.args, "--http-addr", "")...)
		if code != exitUsage || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%q: exit %d, output %q; want exit %d saying %q", c.args, code, out+errOut, exitUsage, c.want)
		}
	}
}
