// Package ops is the catalogue of node ops: each op's name and its typed
// request and response, the result envelope the agent prints, and the
// command line that runs the agent on a node.
//
// The same types are used by swdt (pkg/node), by the agent's handlers
// (pkg/agent) and by the simulator (pkg/simnode), so the three cannot
// drift apart. Requests carry every parameter as JSON on the agent's
// stdin; nothing a user wrote is ever placed on a command line.
package ops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
)

// Op names one op and binds its request and response types.
type Op[Req, Resp any] struct {
	// Name is the op's name: the NAME of `swdt-agent op NAME`.
	Name string
}

// register records an op's name in the catalogue and returns it.
func register[Req, Resp any](name string) Op[Req, Resp] {
	if _, dup := names[name]; dup {
		panic("ops: op " + name + " registered twice")
	}
	names[name] = struct{}{}
	return Op[Req, Resp]{Name: name}
}

var names = map[string]struct{}{}

// registerStreaming is register for an op whose output streams: the
// agent's stdout and stderr carry a program's output as it is written,
// and the result line comes last on stderr instead of stdout.
func registerStreaming[Req, Resp any](name string) Op[Req, Resp] {
	op := register[Req, Resp](name)
	streaming[name] = true
	return op
}

var streaming = map[string]bool{}

// Streams reports whether op name streams output (its result line is
// the last line on stderr).
func Streams(name string) bool { return streaming[name] }

// Names lists every op of the catalogue, sorted.
func Names() []string {
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ResultMarker starts the one stdout line that carries an op's result
// envelope. Anything else on stdout (a shell banner, a profile's output)
// is ignored.
const ResultMarker = "#swdt-result-v1#"

// Envelope is the one result line the agent prints behind ResultMarker.
type Envelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error *EnvelopeError  `json:"error,omitempty"`
	// ImageModTime is the last-write time of the agent's own executable,
	// in Unix nanoseconds at the file system's full precision (SFTP
	// version 3 shows whole seconds only); 0 when unknown.
	ImageModTime int64 `json:"imageModTime,omitempty"`
	// ImageSize is the size of the agent's own executable; 0 when
	// unknown.
	ImageSize int64 `json:"imageSize,omitempty"`
}

// EnvelopeError is a failed op's typed error.
type EnvelopeError struct {
	// Kind is the error's machine-readable class.
	Kind Kind `json:"kind"`
	// Message is the human-readable detail.
	Message string `json:"message"`
}

// FormatEnvelope renders the result line the agent prints.
func FormatEnvelope(env Envelope) ([]byte, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	return append(append([]byte(ResultMarker), raw...), "\r\n"...), nil
}

// ParseEnvelope finds the last line of stdout that starts with
// ResultMarker and decodes it. Stray output before or after is ignored.
func ParseEnvelope(stdout []byte) (*Envelope, error) {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		if i := bytes.Index(line, []byte(ResultMarker)); i >= 0 {
			last = append(last[:0], line[i+len(ResultMarker):]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read op output: %w", err)
	}
	if last == nil {
		return nil, fmt.Errorf("no result line (%s) in op output", ResultMarker)
	}
	var env Envelope
	if err := json.Unmarshal(last, &env); err != nil {
		return nil, fmt.Errorf("decode result line: %w", err)
	}
	if !env.OK && env.Error == nil {
		return nil, fmt.Errorf("result line reports failure without an error")
	}
	return &env, nil
}

// AgentDir is where swdt keeps the agent, the swap lock, the journal and
// their bookkeeping on a node: a folder below C:\Program Files, where
// only Administrators and SYSTEM may create anything (docs/DESIGN.md §9),
// so that nothing a non-administrator wrote can be there.
const AgentDir = `C:\Program Files\swdt`

// AgentPath is the content-addressed path of the agent whose SHA-256 is
// digest (lower-case hex).
func AgentPath(digest string) string {
	return AgentDir + `\swdt-agent-` + digest[:16] + `.exe`
}

// agentPathRE matches what AgentPath returns.
var agentPathRE = regexp.MustCompile(`^C:\\Program Files\\swdt\\swdt-agent-[0-9a-f]{16}\.exe$`)

// IsAgentPath reports whether p is a path AgentPath returns.
func IsAgentPath(p string) bool { return agentPathRE.MatchString(p) }

// CommandLine is the exact command line that runs op name with the agent
// at path: `cmd.exe /d /c "<path>" op <name>`. Both parts come from swdt
// itself, never from user data. The path holds a space, and a quoted
// program name starts an expression in PowerShell: run through cmd.exe
// (which keeps the quotes of a command line that is one quoted program
// and plain words), the same line works whether sshd's default shell is
// cmd.exe, powershell.exe or pwsh.
func CommandLine(path, name string) string {
	return `cmd.exe /d /c "` + path + `" op ` + name
}

// ParseCommandLine is the inverse of CommandLine: ok is false for any
// other command line.
func ParseCommandLine(cmd string) (path, name string, ok bool) {
	m := commandRE.FindStringSubmatch(cmd)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

var commandRE = regexp.MustCompile(`^cmd\.exe /d /c "(C:\\Program Files\\swdt\\swdt-agent-[0-9a-f]{16}\.exe)" op ([a-z][a-z0-9-]*)$`)
