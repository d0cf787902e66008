package push_test

import (
	"context"
	"net"

	"github.com/jdwpaccel/jdwpaccel/push"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Both ends of split mode in one process: the far end's relay dials the
// VM, the near end's relay dials the far end (in split mode, through the
// authenticated split stream), and the debugger attaches to the near end.
// Each end installs its push hooks in place of its speculator's Hooks,
// before any other hook that could consume packets (write-behind, the
// journal's observers after).
func Example() {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	cfg := push.Config{Counters: new(push.Counters), Metrics: push.NewMetrics(reg)}

	farSpec := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	far := relay.NewServer(relay.Config{
		DialVM:   relay.DialTCP("127.0.0.1:5005"),
		NewHooks: relay.ChainHooks(push.FarHooks(farSpec, cfg)),
	})
	farLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	go far.Serve(ctx, farLn) //nolint:errcheck // an example

	nearSpec := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
	near := relay.NewServer(relay.Config{
		DialVM:   relay.DialTCP(farLn.Addr().String()),
		NewHooks: relay.ChainHooks(push.NearHooks(nearSpec, cfg)),
	})
	nearLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	go near.Serve(ctx, nearLn) //nolint:errcheck // an example

	// Bytes pushed per step, for a report: the far end's bundle bytes per
	// stop it held.
	st := cfg.Counters.Stats()
	_ = float64(st.BytesSent) / float64(max(st.Stops, 1))
}
