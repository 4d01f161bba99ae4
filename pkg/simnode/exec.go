package simnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/pwsh"
)

// exec runs one command line and returns its exit status. ctx ends when
// the session does.
func (cs *connState) exec(ctx context.Context, ch ssh.Channel, command string) int {
	if command == pwsh.CommandLine() {
		return cs.runOp(ctx, ch)
	}
	first := strings.Fields(command)
	word := ""
	if len(first) > 0 {
		word = first[0]
	}
	if strings.EqualFold(strings.TrimSuffix(strings.ToLower(word), ".exe"), "powershell") {
		// Only swdt's op bootstrap is simulated.
		io.Copy(io.Discard, ch)
		fmt.Fprint(ch.Stderr(), clixmlError("simnode", "simnode simulates only swdt's op protocol, not arbitrary PowerShell (this is a simulator, not Windows)"))
		return 1
	}
	if word == "" {
		return 0
	}
	fmt.Fprintf(ch.Stderr(), "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", word)
	return 1
}

// runOp implements DESIGN.md §3.1 from the node's side: read the whole
// script from stdin (an op whose stdin is never closed never finishes),
// find the op and its parameters, run the Go implementation, print the
// envelope, and on failure also an error record on stderr as CLIXML.
//
// Like sshd, which ends every process of a session when the session ends,
// a handler's ctx is cancelled when the client closes the session or the
// connection drops.
func (cs *connState) runOp(ctx context.Context, ch ssh.Channel) int {
	script, err := io.ReadAll(ch)
	if err != nil {
		return 1
	}
	name, params, err := pwsh.ParseScript(script)
	if err != nil {
		// A real powershell.exe would fail to parse or run it.
		fmt.Fprint(ch.Stderr(), clixmlError("bootstrap", err.Error()))
		return 1
	}
	m := cs.srv.m
	log := cs.srv.log.With("op", name, "user", cs.account.Name)
	start := time.Now()
	faults := m.faults()
	lat := faults.OpLatencyMS[name]
	if lat == 0 {
		lat = faults.OpLatencyMS["*"]
	}
	n := cs.srv.node(cs.account)
	if err := n.Sleep(ctx, time.Duration(lat)*time.Millisecond); err != nil {
		return 1
	}
	var data any
	if slices.Contains(faults.FailOps, name) && m.takeFailOp(name) {
		err = Fail("injected", "op %s failed: injected by simnode's faults", name)
	} else if h := handlerOf(name); h == nil {
		err = Fail("exception", "The term 'op %s' is not recognized: simnode has no implementation of this op", name)
	} else {
		data, err = runHandler(ctx, h, n, params)
	}
	var env pwsh.Envelope
	if err != nil {
		kind, msg := failureOf(err)
		env = pwsh.Envelope{OK: false, Error: &pwsh.EnvelopeError{Kind: kind, Message: msg}}
		log.Info("op failed", "kind", kind, "err", msg, "duration", time.Since(start))
	} else {
		raw, merr := json.Marshal(data)
		if merr != nil {
			env = pwsh.Envelope{OK: false, Error: &pwsh.EnvelopeError{Kind: "exception", Message: merr.Error()}}
		} else {
			env = pwsh.Envelope{OK: true, Data: raw}
		}
		log.Info("op", "duration", time.Since(start))
	}
	line, ferr := pwsh.FormatEnvelope(env)
	if ferr != nil {
		return 1
	}
	if _, err := ch.Write(line); err != nil {
		return 1
	}
	if !env.OK {
		fmt.Fprint(ch.Stderr(), clixmlError(name, env.Error.Message))
		return 1
	}
	return 0
}

// runHandler turns a handler panic into an "exception" failure rather
// than killing the simulator.
func runHandler(ctx context.Context, h opHandler, n *Node, params json.RawMessage) (data any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("simnode handler panic: %v", r)
		}
	}()
	return h(ctx, n, params)
}
