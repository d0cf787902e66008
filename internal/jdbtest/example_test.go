package jdbtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
)

// Compare jdb transcripts of a direct session and one through a proxy.
func ExampleRun() {
	ctx := context.Background()
	build, err := javavm.Compile(ctx)
	if err != nil {
		log.Fatal(err)
	}
	line, _ := javavm.BreakpointLine(javavm.Transcript)
	script := []string{fmt.Sprintf("stop at Transcript:%d", line), "run", "where", "locals", "next", "locals", "cont", "exit"}
	vm, err := javavm.Start(ctx, build, javavm.Transcript, javavm.VMOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Stop()
	direct, err := jdbtest.Run(ctx, build, vm.Addr(), script)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(direct)
}
