package front

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
)

// AgentVersion is the version the in-process agent reports.
const AgentVersion = "simnode"

// exec runs one command line and returns its exit status. ctx ends when
// the session does.
func (cs *connState) exec(ctx context.Context, ch ssh.Channel, command string) int {
	if path, name, ok := ops.ParseCommandLine(command); ok {
		return cs.runAgent(ctx, ch, path, name)
	}
	first := strings.Fields(command)
	word := ""
	if len(first) > 0 {
		word = first[0]
	}
	if word == "" {
		return 0
	}
	io.Copy(io.Discard, ch)
	if strings.EqualFold(strings.TrimSuffix(strings.ToLower(word), ".exe"), "powershell") {
		fmt.Fprint(ch.Stderr(), "simnode runs only swdt-agent, not PowerShell (this is a simulator, not Windows)\r\n")
		return 1
	}
	fmt.Fprintf(ch.Stderr(), "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", word)
	return 1
}

// runAgent is what running the uploaded swdt-agent.exe does on a node:
// simnode runs the same handlers (pkg/agent) in-process, against its
// simulated Windows layer (Node.OS). The agent must have been uploaded to
// path first, as on Windows, where a missing program cannot be started.
//
// Like OpenSSH for Windows, which does not end a non-PTY command when
// its client goes away, the handler runs on to the end of its op when the
// session ends (agentOS); only an AgentHold with Dies kills it.
func (cs *connState) runAgent(ctx context.Context, ch ssh.Channel, path, name string) int {
	n := cs.srv.node(cs.account)
	if fi, err := n.Stat(path); err != nil || fi.IsDir {
		io.Copy(io.Discard, ch)
		fmt.Fprintf(ch.Stderr(), "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", path)
		return 1
	}
	if !cs.srv.m.TrustedAgent(path) {
		// Whatever these bytes are, they are not swdt-agent: on Windows
		// they would have run with the session's rights.
		io.Copy(io.Discard, ch)
		cs.srv.m.RanUntrusted(path)
		cs.srv.log.Warn("ran untrusted program "+path, "user", cs.account.Name)
		fmt.Fprintf(ch.Stderr(), "simnode: ran untrusted program %s (its bytes are not swdt-agent's)\r\n", path)
		return 1
	}
	stdin, err := io.ReadAll(ch)
	if err != nil {
		return 1
	}
	m := cs.srv.m
	log := cs.srv.log.With("op", name, "user", cs.account.Name)
	start := time.Now()
	faults := m.Faults()
	lat := faults.OpLatencyMS[name]
	if lat == 0 {
		lat = faults.OpLatencyMS["*"]
	}
	if err := n.Sleep(ctx, time.Duration(lat)*time.Millisecond); err != nil {
		return 1
	}
	if slices.Contains(faults.FailOps, name) && m.TakeFailOp(name) {
		line, _ := ops.FormatEnvelope(ops.Envelope{Error: &ops.EnvelopeError{Kind: ops.KindInjected, Message: "op " + name + " failed: injected by simnode's faults"}})
		ch.Write(line)
		log.Info("op failed", "kind", ops.KindInjected)
		return 1
	}
	if cs.srv.wine != nil {
		status := cs.srv.wine.RunAgent(ctx, path, name, stdin, ch, ch.Stderr())
		log.Info("op", "status", status, "duration", time.Since(start), "wine", true)
		return status
	}
	w, ctx, end := n.Agent(ctx, name, func() { cs.conn.Close() })
	defer end()
	self := agent.Self{Path: path, Version: AgentVersion, GOARCH: "amd64"}
	if ops.Streams(name) {
		// A program's output reaches the client as it is written.
		status := agent.Run(ctx, w, self, []string{"op", name}, bytes.NewReader(stdin), ch, ch.Stderr())
		log.Info("op", "status", status, "duration", time.Since(start))
		return status
	}
	var out bytes.Buffer
	status := agent.Run(ctx, w, self, []string{"op", name}, bytes.NewReader(stdin), &out, ch.Stderr())
	if _, err := ch.Write(out.Bytes()); err != nil {
		return 1
	}
	log.Info("op", "status", status, "duration", time.Since(start))
	return status
}
