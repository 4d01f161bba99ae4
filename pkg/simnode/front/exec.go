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
	"sigs.k8s.io/swdt/pkg/simnode/machine"
)

// exec runs one command line and returns its exit status. ctx ends when
// the session does.
func (cs *connState) exec(ctx context.Context, ch ssh.Channel, command string) int {
	if path, name, ok := ops.ParseCommandLine(command); ok {
		return cs.srv.runAgent(ctx, cs.account, path, name, ch, ch, ch.Stderr(), func() { cs.conn.Close() })
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
// simulated Windows layer (Node.OS), as account. The agent must have been
// uploaded to path first, as on Windows, where a missing program cannot be
// started. cut drops the connection the op came on (an AgentHold's Cut).
//
// Like OpenSSH for Windows, which does not end a non-PTY command when
// its client goes away, the handler runs on to the end of its op when the
// session ends (agentOS); only an AgentHold with Dies kills it.
func (s *Server) runAgent(ctx context.Context, account machine.Account, path, name string, stdin io.Reader, stdout, stderr io.Writer, cut func()) int {
	n := s.node(account)
	if fi, err := n.Stat(path); err != nil || fi.IsDir {
		io.Copy(io.Discard, stdin)
		fmt.Fprintf(stderr, "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", path)
		return 1
	}
	if !s.m.TrustedAgent(path) {
		// Whatever these bytes are, they are not swdt-agent: on Windows
		// they would have run with the session's rights.
		io.Copy(io.Discard, stdin)
		s.m.RanUntrusted(path)
		s.log.Warn("ran untrusted program "+path, "user", account.Name)
		fmt.Fprintf(stderr, "simnode: ran untrusted program %s (its bytes are not swdt-agent's)\r\n", path)
		return 1
	}
	in, err := io.ReadAll(stdin)
	if err != nil {
		return 1
	}
	m := s.m
	log := s.log.With("op", name, "user", account.Name)
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
		stdout.Write(line)
		log.Info("op failed", "kind", ops.KindInjected)
		return 1
	}
	if s.wine != nil {
		status := s.wine.RunAgent(ctx, path, name, in, stdout, stderr)
		log.Info("op", "status", status, "duration", time.Since(start), "wine", true)
		return status
	}
	w, ctx, end := n.Agent(ctx, name, cut)
	defer end()
	self := agent.Self{Path: path}
	if ops.Streams(name) {
		// A program's output reaches the client as it is written.
		status := agent.Run(ctx, w, self, []string{"op", name}, bytes.NewReader(in), stdout, stderr)
		log.Info("op", "status", status, "duration", time.Since(start))
		return status
	}
	var out bytes.Buffer
	status := agent.Run(ctx, w, self, []string{"op", name}, bytes.NewReader(in), &out, stderr)
	// Logged before the client has its result: a reader of the log (the
	// bench) has the op's line by the time the client is done.
	log.Info("op", "status", status, "duration", time.Since(start))
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return 1
	}
	return status
}
