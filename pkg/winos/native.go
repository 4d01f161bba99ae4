package winos

// The parts of the real Windows layer (the *_windows.go files) that are
// pure data handling: encodings, table layouts and script I/O. They live
// here, without a build tag, so that their tests run on every platform;
// nothing here calls the system.

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// maxOutput bounds what Run keeps of each of a program's output streams,
// so that a program printing without end cannot exhaust the agent's
// memory; the rest is read and dropped so the program never blocks.
const maxOutput = 4 << 20

// maxScriptError bounds how much of a failed script's stderr goes into
// the error message.
const maxScriptError = 2000

// powershellArgs is powershell.exe's argument list for a fixed script.
// -EncodedCommand takes the script as base64 of its UTF-16LE text, so
// that no quoting rule of the command line can alter it; the script's
// data arrives on stdin, never here.
func powershellArgs(source string) []string {
	return []string{"-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass",
		"-EncodedCommand", encodeCommand(source)}
}

// scriptStdin is a script's JSON input as powershell.exe is given it:
// every non-ASCII character escaped (\uXXXX, a surrogate pair beyond the
// BMP). powershell.exe decodes stdin with the console's input code page
// (the OEM one, not UTF-8), and only ASCII reads the same in all of them;
// in valid JSON such characters occur only inside strings, where the
// escape means the same character.
func scriptStdin(input []byte) []byte {
	out := make([]byte, 0, len(input))
	for _, r := range string(input) {
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}

// encodeCommand is source as -EncodedCommand expects it: base64 of its
// UTF-16LE encoding.
func encodeCommand(source string) string {
	units := utf16.Encode([]rune(source))
	raw := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(raw[2*i:], u)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// resolveProgram is the executable a Command names: a bare name (no
// directory, no drive) is looked up in systemDir only, never on PATH, so
// that a writable directory early on PATH cannot supply a System32 tool.
func resolveProgram(path, systemDir string) string {
	if path == "" || strings.ContainsAny(path, `\/:`) {
		return path
	}
	return strings.TrimRight(systemDir, `\`) + `\` + path
}

// limitedBuffer keeps the first max bytes written to it and counts the
// rest as written, so that a program's pipe is always drained.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Bytes is what was kept; nil when nothing was written.
func (b *limitedBuffer) Bytes() []byte {
	if b.buf.Len() == 0 {
		return nil
	}
	return b.buf.Bytes()
}

// Layout of GetExtendedTcpTable's MIB_TCPTABLE_OWNER_PID and
// MIB_TCP6TABLE_OWNER_PID: a DWORD row count, then fixed-size rows. The
// local port is a DWORD whose first two bytes hold the port in network
// byte order.
const (
	tcpRowSize       = 24 // MIB_TCPROW_OWNER_PID: state, local addr, local port, remote addr, remote port, pid
	tcpRowPortOffset = 8
	tcp6RowSize      = 56 // MIB_TCP6ROW_OWNER_PID: local addr[16], scope, local port, remote addr[16], scope, remote port, state, pid
	tcp6RowPortOff   = 20
)

// tcpTablePorts returns the local ports of a GetExtendedTcpTable result
// (rows of rowSize bytes, the port at portOffset in each).
func tcpTablePorts(table []byte, rowSize, portOffset int) ([]int, error) {
	if len(table) < 4 {
		return nil, fmt.Errorf("TCP table of %d bytes has no row count", len(table))
	}
	n := int(binary.LittleEndian.Uint32(table))
	if n > (len(table)-4)/rowSize {
		return nil, fmt.Errorf("TCP table of %d bytes cannot hold %d rows", len(table), n)
	}
	ports := make([]int, 0, n)
	for i := range n {
		row := table[4+i*rowSize:]
		ports = append(ports, int(binary.BigEndian.Uint16(row[portOffset:])))
	}
	return ports, nil
}

// fileVersionKeys are the VerQueryValue paths of the FileVersion string,
// in the order .NET's FileVersionInfo (and so Get-Item's VersionInfo)
// tries them: the first language and code page of \VarFileInfo\Translation
// (translation: its raw bytes, possibly empty), then U.S. English in
// Unicode, Windows-1252 and neutral code pages.
func fileVersionKeys(translation []byte) []string {
	var pages []string
	if len(translation) >= 4 {
		lang := binary.LittleEndian.Uint16(translation)
		cp := binary.LittleEndian.Uint16(translation[2:])
		pages = append(pages, fmt.Sprintf("%04X%04X", lang, cp))
	}
	for _, fallback := range []string{"040904B0", "040904E4", "04090000"} {
		if len(pages) == 0 || pages[0] != fallback {
			pages = append(pages, fallback)
		}
	}
	keys := make([]string, len(pages))
	for i, p := range pages {
		keys[i] = `\StringFileInfo\` + p + `\FileVersion`
	}
	return keys
}

// noVersionResource reports whether a GetFileVersionInfoSize error means
// the file has no version resource (or is no executable): such a file
// simply has no version, as .NET's FileVersionInfo says.
func noVersionResource(code Errno) bool {
	switch code {
	case 11, ErrBadExeFormat, 1812, 1813, 1814: // ERROR_BAD_FORMAT, ..., ERROR_RESOURCE_{DATA,TYPE,NAME}_NOT_FOUND
		return true
	}
	return false
}

// The service control manager counts failure-action delays in
// milliseconds and the reset period in seconds, both as DWORDs; INFINITE
// (the largest DWORD) is "never reset".
func scMilliseconds(d time.Duration) uint32 { return clampDWORD(d.Milliseconds()) }

func scSeconds(d time.Duration) uint32 { return clampDWORD(int64(d / time.Second)) }

func clampDWORD(v int64) uint32 {
	return uint32(max(0, min(v, math.MaxUint32)))
}

// Script I/O: the JSON the fixed scripts read on stdin and print.

type firewallRulesInput struct {
	Names []string `json:"names"`
}

type firewallSetInput struct {
	Names   []string `json:"names"`
	Enabled bool     `json:"enabled"`
}

type serviceEventsInput struct {
	// Names are the service's name and display name: the SCM's messages
	// use display names.
	Names []string `json:"names"`
	// Since is RFC 3339 in UTC, to the second (rounded down, so that no
	// event at or after the asked time is missed).
	Since string `json:"since"`
	Max   int    `json:"max"`
}

type firewallRuleOutput struct {
	Name    string `json:"name"`
	Exists  bool   `json:"exists"`
	Enabled bool   `json:"enabled"`
}

// scriptInput marshals a script's input; the inputs are plain structs
// of strings, so marshalling cannot fail.
func scriptInput(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("winos: script input: " + err.Error())
	}
	return b
}

// nonNil keeps a nil list from marshalling as null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// scriptOutput checks that a script succeeded and decodes its JSON
// output into v.
func scriptOutput(s Script, res Result, v any) error {
	if err := scriptFailure(s, res); err != nil {
		return err
	}
	out := bytes.TrimSpace(bytes.TrimPrefix(res.Stdout, []byte("\xef\xbb\xbf")))
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("script %s printed no valid JSON (%w): %q", s.Name(), err, clip(out, maxScriptError))
	}
	return nil
}

// scriptFailure is the error of a script that exited non-zero: the
// failure line request-prelude.ps1 prints, else its exit code and the
// start of its stderr, as text.
func scriptFailure(s Script, res Result) error {
	if res.ExitCode == 0 {
		return nil
	}
	if f, ok := ScriptFailureLine(res.Stdout); ok {
		return fmt.Errorf("script %s failed (%s): %s", s.Name(), f.Kind, f.Message)
	}
	return fmt.Errorf("script %s exited with code %d: %s", s.Name(), res.ExitCode, ScriptStderr(clip(res.Stderr, maxScriptError)))
}

// ScriptFailure is a script's failure line's content:
// {"error": {"kind": "...", "message": "..."}}.
type ScriptFailure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ScriptFailureLine finds the failure line a script that runs after
// request-prelude.ps1 prints last on stdout when it fails.
func ScriptFailureLine(stdout []byte) (ScriptFailure, bool) {
	lines := bytes.Split(stdout, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var out struct {
			Error *ScriptFailure `json:"error"`
		}
		if json.Unmarshal(line, &out) == nil && out.Error != nil {
			return *out.Error, true
		}
	}
	return ScriptFailure{}, false
}

// ScriptStderr is what powershell.exe wrote on stderr as text. With its
// output redirected it writes errors as CLIXML ("#< CLIXML" and an XML
// serialization of the error records): their text is extracted, one
// line per record. Anything else is returned trimmed, as valid UTF-8.
func ScriptStderr(stderr []byte) string {
	const marker = "#< CLIXML"
	text := strings.TrimSpace(strings.ToValidUTF8(string(stderr), ""))
	if !strings.HasPrefix(text, marker) {
		return text
	}
	dec := xml.NewDecoder(strings.NewReader(strings.TrimPrefix(text, marker)))
	var lines []string
	var b strings.Builder
	inError := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break // the end, or a truncated tail: keep what was read
		}
		switch t := tok.(type) {
		case xml.StartElement:
			inError = t.Name.Local == "S" && slices.ContainsFunc(t.Attr, func(a xml.Attr) bool { return a.Name.Local == "S" && a.Value == "Error" })
		case xml.CharData:
			if inError {
				b.Write(t)
			}
		case xml.EndElement:
			if inError {
				inError = false
			}
		}
	}
	for _, l := range strings.Split(clixmlUnescape(b.String()), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return text
	}
	return strings.Join(lines, "\n")
}

// clixmlEscape matches CLIXML's escapes of characters XML cannot hold,
// such as _x000D__x000A_ for CR LF.
var clixmlEscape = regexp.MustCompile(`_x([0-9A-Fa-f]{4})_`)

func clixmlUnescape(s string) string {
	return clixmlEscape.ReplaceAllStringFunc(s, func(m string) string {
		v, err := strconv.ParseUint(m[2:6], 16, 16)
		if err != nil {
			return m
		}
		if v == '\r' {
			return ""
		}
		return string(rune(v))
	})
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// firewallRules decodes ScriptFirewallRules' output, which must hold one
// rule per name asked, in order.
func firewallRules(res Result, names []string) ([]FirewallRule, error) {
	var raw []firewallRuleOutput
	if err := scriptOutput(ScriptFirewallRules, res, &raw); err != nil {
		return nil, err
	}
	if len(raw) != len(names) {
		return nil, fmt.Errorf("script %s returned %d rules for %d names", ScriptFirewallRules.Name(), len(raw), len(names))
	}
	rules := make([]FirewallRule, len(raw))
	for i, r := range raw {
		rules[i] = FirewallRule{Name: r.Name, Exists: r.Exists, Enabled: r.Enabled}
	}
	return rules, nil
}

// serviceEvents decodes ScriptServiceEvents' output.
func serviceEvents(res Result) ([]string, error) {
	var lines []string
	if err := scriptOutput(ScriptServiceEvents, res, &lines); err != nil {
		return nil, err
	}
	return nonNil(lines), nil
}

// eventsInput is ScriptServiceEvents' input for a service known by name
// and display name.
func eventsInput(name, displayName string, since time.Time, limit int) []byte {
	names := []string{name}
	if displayName != "" && !strings.EqualFold(displayName, name) {
		names = append(names, displayName)
	}
	return scriptInput(serviceEventsInput{Names: names, Since: since.UTC().Format(time.RFC3339), Max: limit})
}
