// Command fwd is a tunnel for tests: it listens on -listen, forwards each
// connection to -to, and exits with status 1 after -die (its connections
// die with it), as a kubectl port-forward that keeps dropping.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "where to listen")
	to := flag.String("to", "", "where to forward")
	die := flag.Duration("die", 0, "exit after this long (0: never)")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fwd:", err)
		os.Exit(2)
	}
	fmt.Println("Forwarding from", ln.Addr(), "->", *to)
	if *die > 0 {
		time.AfterFunc(*die, func() {
			fmt.Fprintln(os.Stderr, "fwd: lost connection to pod")
			os.Exit(1)
		})
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(2)
		}
		fmt.Println("Handling connection for", *listen)
		go func() {
			u, err := net.Dial("tcp", *to)
			if err != nil {
				c.Close()
				return
			}
			go func() { io.Copy(u, c); u.Close() }()
			io.Copy(c, u)
			c.Close()
		}()
	}
}
