package javavm_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
)

// Run the IDE-like driver against a Deep debuggee, directly. To measure a
// proxy, start it in front of vm.Addr() and pass its address instead.
func ExampleRunDriver() {
	ctx := context.Background()
	build, err := javavm.Compile(ctx)
	if err != nil {
		log.Fatal(err)
	}
	vm, err := javavm.Start(ctx, build, javavm.Deep, javavm.VMOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Stop()
	res, err := javavm.RunDriver(ctx, build, javavm.DriverOptions{
		Addr: vm.Addr(), Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep,
		Steps: 20, Warmup: 3,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(res.Stops), res.MedianBurst(), res.Digests()[0])
}
