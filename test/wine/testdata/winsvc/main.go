//go:build windows

// Command winsvc is a real Windows service program for the Wine tests:
// it runs under the service control manager (golang.org/x/sys/windows/svc)
// until it is stopped. The tests build it once and make its variants by
// appending a trailer to the executable (bytes after the PE image, which
// Windows ignores): "\nwinsvc:" followed by space-separated settings,
//
//	build=NAME       a label, so that two variants have different bytes
//	exit=CODE        exit with CODE right after reporting Running
//	listen=ADDR      listen on the TCP address ADDR while running
//	hangstop=1       ignore the stop control: report StopPending and run
//	                 on until killed
//
// Run with the one argument "hang", it is a console program that prints
// "started" and then blocks until it is killed (for swdt exec --timeout).
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/windows/svc"
)

type settings struct {
	exit     int
	listen   string
	hangStop bool
}

// readSettings reads the trailer of the program's own file.
func readSettings() (settings, error) {
	s := settings{exit: -1}
	exe, err := os.Executable()
	if err != nil {
		return s, err
	}
	raw, err := os.ReadFile(exe)
	if err != nil {
		return s, err
	}
	i := bytes.LastIndex(raw, []byte("\nwinsvc:"))
	if i < 0 {
		return s, nil
	}
	for _, f := range strings.Fields(string(raw[i+len("\nwinsvc:"):])) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "exit":
			if s.exit, err = strconv.Atoi(v); err != nil {
				return s, fmt.Errorf("exit=%q: %w", v, err)
			}
		case "listen":
			s.listen = v
		case "hangstop":
			s.hangStop = v == "1"
		}
	}
	return s, nil
}

type service struct{ s settings }

func (h service) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	if h.s.listen != "" {
		ln, err := net.Listen("tcp", h.s.listen)
		if err != nil {
			return true, 2
		}
		defer ln.Close()
	}
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	if h.s.exit >= 0 {
		os.Exit(h.s.exit)
	}
	for c := range req {
		switch c.Cmd {
		case svc.Interrogate:
			status <- c.CurrentStatus
		case svc.Stop, svc.Shutdown:
			status <- svc.Status{State: svc.StopPending}
			if !h.s.hangStop {
				return false, 0
			}
		}
	}
	return false, 0
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "hang" {
		fmt.Println("started")
		for {
			time.Sleep(time.Hour)
		}
	}
	s, err := readSettings()
	if err != nil {
		fmt.Fprintln(os.Stderr, "winsvc:", err)
		os.Exit(2)
	}
	if err := svc.Run("", service{s}); err != nil {
		fmt.Fprintln(os.Stderr, "winsvc:", err)
		os.Exit(1)
	}
}
