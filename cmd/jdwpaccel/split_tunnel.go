package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/split"
	"github.com/jdwpaccel/jdwpaccel/tunnel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// tunnelWait bounds how long a debugger that attaches waits for the
// tunnel (--far-tunnel) while it is down.
const tunnelWait = 20 * time.Second

// newTunnel is the near end's tunnel to the far end (--far-tunnel), whose
// checks are probes of the far end through it (a far end that answers
// to refuse counts as reached), and a dialer of the far end that waits
// for the tunnel first.
func newTunnel(line string, nc split.NearConfig, log zerolog.Logger, reg prometheus.Registerer) (*tunnel.Tunnel, relay.Dialer, error) {
	argv, err := tunnel.Split(line)
	if err != nil {
		return nil, nil, fmt.Errorf("--far-tunnel: %v", err)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, nil, fmt.Errorf("--far-tunnel: %v", err)
	}
	check := func(ctx context.Context) error {
		_, err := split.Probe(ctx, nc)
		var skew *split.SkewError
		if errors.Is(err, split.ErrUnauthorized) || errors.As(err, &skew) {
			return nil
		}
		return err
	}
	tun := tunnel.New(tunnel.Config{Argv: argv, Addr: nc.Addr, Check: check,
		Logger: log.With().Str(relay.LogComponent, "tunnel").Logger(), Metrics: tunnel.NewMetrics(reg)})
	dial := split.Dialer(nc)
	return tun, func(ctx context.Context) (relay.VMConn, error) {
		wctx, cancel := context.WithTimeout(ctx, tunnelWait)
		err := tun.Wait(wctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			return relay.VMConn{}, fmt.Errorf("the tunnel to the far end (--far-tunnel) is not up after %v; its log lines say why", tunnelWait)
		}
		return dial(ctx)
	}, nil
}

// runTunnel runs st's tunnel, if any, until ctx is done, and waits up to
// its ready timeout for it to come up, so that the start probe goes
// through it. The returned function stops it and waits.
func runTunnel(ctx context.Context, st *stack, log zerolog.Logger) (stop func()) {
	if st.tunnel == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); st.tunnel.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, tunnel.DefaultReadyTimeout)
	defer wcancel()
	if err := st.tunnel.Wait(wctx); err != nil && ctx.Err() == nil {
		log.Warn().Msg("the tunnel to the far end is not up yet; it is restarted until it is, and debuggers that attach wait for it")
	}
	return func() { cancel(); <-done }
}
