package discover

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
	"unicode"

	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/rs/zerolog"
)

// ADB finds the debuggable processes of devices behind a local adb server
// with track-jdwp, and reaches each with jdwp:PID. It asks adb only for
// process lists and (for names) /proc/PID/cmdline through the shell
// service; it never opens a JDWP connection to find a VM.
type ADB struct {
	Client *ADBClient
	// Serial limits the source to one device; empty means every device
	// in the "device" state (host:track-devices).
	Serial string
	// PID limits the source to one process; 0 means every debuggable one.
	PID int
	// Retry is the wait before retrying after adb failed (2 s when zero).
	Retry time.Duration
	// NoNames turns off reading process names with the shell service.
	NoNames bool
	Logger  zerolog.Logger
}

// adbRun is the state of one ADB.Run.
type adbRun struct {
	a      *ADB
	report func([]VM)

	mu      sync.Mutex // guards devices and serialises report
	devices map[string][]VM
}

// Run tracks devices and their processes until ctx ends.
func (a *ADB) Run(ctx context.Context, report func([]VM)) error {
	r := &adbRun{a: a, report: report, devices: map[string][]VM{}}
	report(nil)
	if a.Serial != "" {
		r.trackDevice(ctx, a.Serial)
		return nil
	}
	r.trackDevices(ctx)
	return nil
}

func (a *ADB) retry() time.Duration {
	if a.Retry <= 0 {
		return 2 * time.Second
	}
	return a.Retry
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// trackDevices follows host:track-devices and runs trackDevice for each
// device while it is online.
func (r *adbRun) trackDevices(ctx context.Context) {
	type tracker struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	trackers := map[string]tracker{} // owned by this goroutine
	stopAll := func(keep map[string]bool) {
		for s, t := range trackers {
			if !keep[s] {
				t.cancel()
				<-t.done
				delete(trackers, s)
				r.set(s, nil)
			}
		}
	}
	defer stopAll(nil)
	var lastErr string
	for ctx.Err() == nil {
		err := r.a.Client.TrackDevices(ctx, func(ds []ADBDevice) {
			online := map[string]bool{}
			for _, d := range ds {
				if d.State == "device" {
					online[d.Serial] = true
				}
			}
			stopAll(online)
			for s := range online {
				if _, ok := trackers[s]; ok {
					continue
				}
				tctx, cancel := context.WithCancel(ctx)
				t := tracker{cancel: cancel, done: make(chan struct{})}
				trackers[s] = t
				go func() {
					defer close(t.done)
					r.trackDevice(tctx, s)
				}()
			}
		})
		if ctx.Err() != nil {
			return
		}
		stopAll(nil)
		if err != nil && err.Error() != lastErr {
			r.a.Logger.Warn().Err(err).Msg("cannot track adb devices; retrying")
			lastErr = err.Error()
		}
		sleep(ctx, r.a.retry())
	}
}

// trackDevice follows track-jdwp on one device until ctx ends.
func (r *adbRun) trackDevice(ctx context.Context, serial string) {
	names := map[int]string{} // owned by this goroutine
	var lastErr string
	for ctx.Err() == nil {
		err := r.a.Client.TrackJDWP(ctx, serial, func(pids []int) {
			lastErr = ""
			vms := make([]VM, 0, len(pids))
			seen := map[int]bool{}
			for _, pid := range pids {
				if r.a.PID != 0 && pid != r.a.PID {
					continue
				}
				seen[pid] = true
				name, ok := names[pid]
				if !ok && !r.a.NoNames {
					name = r.processName(ctx, serial, pid)
					names[pid] = name
				}
				vms = append(vms, r.vm(serial, pid, name))
			}
			for pid := range names {
				if !seen[pid] {
					delete(names, pid)
				}
			}
			if r.a.PID != 0 && len(vms) == 0 {
				r.a.Logger.Debug().Str(logkey.Serial, serial).Int(logkey.PID, r.a.PID).Msg("the process is not among the device's debuggable processes")
			}
			r.set(serial, vms)
		})
		r.set(serial, nil)
		if ctx.Err() != nil {
			return
		}
		if err != nil && err.Error() != lastErr {
			r.a.Logger.Warn().Err(err).Str(logkey.Serial, serial).Msg("cannot track the device's debuggable processes; retrying")
			lastErr = err.Error()
		}
		sleep(ctx, r.a.retry())
	}
}

// processName reads /proc/PID/cmdline on the device: an app's process
// name is its package name.
func (r *adbRun) processName(ctx context.Context, serial string, pid int) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	b, err := r.a.Client.Shell(ctx, serial, fmt.Sprintf("cat /proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return processNameOf(b)
}

// processNameOf is the process name in the output of cat
// /proc/PID/cmdline: its first argument, or "" when the output is no
// command line. A process name (a package name, with a ":service" suffix
// for an app's other processes) has no spaces, which every error message
// of the shell or of cat has ("/system/bin/sh: cat: inaccessible or not
// found", "cat: /proc/1/cmdline: No such file or directory").
func processNameOf(out []byte) string {
	if i := bytes.IndexByte(out, 0); i >= 0 {
		out = out[:i]
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 || len(out) > 256 || bytes.ContainsFunc(out, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return ""
	}
	return string(out)
}

func (r *adbRun) vm(serial string, pid int, name string) VM {
	c := r.a.Client
	return VM{
		Key:    "adb:" + serial + ":" + strconv.Itoa(pid),
		Kind:   KindADB,
		Name:   name,
		PID:    pid,
		Serial: serial,
		Dial: func(ctx context.Context) (net.Conn, error) {
			return c.DialJDWP(ctx, serial, pid)
		},
	}
}

// set replaces one device's VMs and reports the union.
func (r *adbRun) set(serial string, vms []VM) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(vms) == 0 && len(r.devices[serial]) == 0 {
		delete(r.devices, serial)
		return
	}
	if len(vms) == 0 {
		delete(r.devices, serial)
	} else {
		r.devices[serial] = vms
	}
	all := map[string]VM{}
	for _, d := range r.devices {
		for _, vm := range d {
			all[vm.Key] = vm
		}
	}
	r.report(sortedVMs(all))
}
