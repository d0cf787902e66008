package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// vmsDefaultHTTPAddr is where "jdwpaccel vms" and "jdwpaccel select" look
// for the proxy's control API unless --http-addr says otherwise.
const vmsDefaultHTTPAddr = "127.0.0.1:8790"

// vmFlags are the proxy's flags for VM discovery (--vm scan:..., adb:...).
type vmFlags struct {
	portBase     int
	scanInterval time.Duration
	adbServer    string
	connectProbe bool
}

func (v *vmFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&v.portBase, "vm-port-base", 8701, "with --vm scan: or adb:, each VM found gets its own port from `PORT` on (0: none; --listen reaches the selected VM)")
	fs.DurationVar(&v.scanInterval, "scan-interval", discover.DefaultScanInterval, "how often --vm scan: rescans, and adb: retries after adb failed, `DURATION`")
	fs.StringVar(&v.adbServer, "adb-server", "", "the adb server for --vm adb:, `HOST:PORT` (default 127.0.0.1:5037 or $ANDROID_ADB_SERVER_PORT)")
	fs.BoolVar(&v.connectProbe, "scan-connect", false, "scan by connecting to each port instead of reading /proc (HotSpot then logs a failed handshake per probe)")
}

// vmSpecHelp is the --vm flag's help for the lead's proxyFlags.
const vmSpecHelp = "the VM(s) to debug, `SPEC`, one of:\n" + discover.SpecHelp

// isDiscoverySpec says whether --vm names a discovery source (scan, adb)
// rather than one HOST:PORT, which the proxy serves as before.
func isDiscoverySpec(spec string) bool {
	return spec == "scan" || spec == "adb" || strings.HasPrefix(spec, "scan:") || strings.HasPrefix(spec, "adb:")
}

// newVMManager builds the Manager for --vm spec. selected is the --listen
// listener (the current-VM port); serve runs each VM's relay (see
// relayServeFunc); namer may be nil. The caller runs m.Run(ctx) and mounts
// discover.Handler(m) at discover.APIPrefix on its HTTP listener.
func newVMManager(spec string, vf vmFlags, selected net.Listener, serve discover.ServeFunc, namer discover.AppNamer, log zerolog.Logger, reg prometheus.Registerer) (*discover.Manager, error) {
	src, err := discover.ParseSpec(spec, discover.SpecOptions{
		ScanInterval: vf.scanInterval,
		ConnectProbe: vf.connectProbe,
		ADBAddr:      vf.adbServer,
		Logger:       log.With().Str(relay.LogComponent, "discover").Logger(),
	})
	if err != nil {
		return nil, err
	}
	if vf.portBase < 0 || vf.portBase > 65535 {
		return nil, fmt.Errorf("bad --vm-port-base %d", vf.portBase)
	}
	return discover.NewManager(discover.Config{
		Source:     src,
		Serve:      serve,
		PortBase:   vf.portBase,
		Selected:   selected,
		AppNamer:   namer,
		Logger:     log,
		Registerer: reg,
	})
}

// relayServeFunc returns a ServeFunc running one relay.Server per VM with
// base's settings (its DialVM is replaced by the VM's, and its sessions
// name the VM by its key). ddm, if not nil, gives each VM its own DDM
// holder and monitor for the VM's lifetime: the VM's debuggers get the
// held connection (see ddmVMs.start). Each VM is shared among the clients
// that attach to it at once (fs).
func relayServeFunc(base relay.Config, ddm *ddmVMs, fs *fronts) discover.ServeFunc {
	return func(ctx context.Context, vm discover.VM, dial discover.DialFunc, ln net.Listener) error {
		cfg := base
		cfg.VM = vm.Key
		cfg.DialVM = relay.Plain(dial)
		cfg.Logger = base.Logger.With().Str(discover.LogVMKey, vm.Key).Logger()
		if ddm != nil {
			stop := ddm.start(ctx, vm, dial, &cfg)
			defer stop()
		}
		err := fs.serve(ctx, cfg, vm.Key, ln, nil)
		if err != nil && ddm != nil {
			// Keep the holder (and a held connection a suspend=y VM waits
			// on) until the VM is gone, as if the server were still up.
			<-ctx.Done()
		}
		return err
	}
}
