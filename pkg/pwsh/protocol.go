package pwsh

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
)

// ResultMarker starts the one stdout line that carries an op's result
// envelope. Anything else an op (or a module it loads) prints is ignored.
const ResultMarker = "#swdt-result-v1#"

// bootstrap is the fixed PowerShell program sent with -EncodedCommand. It
// reads all of stdin as UTF-8 bytes and runs it as a script block. It never
// contains user data.
//
// Why raw bytes and not $input: powershell.exe's console host looks for
// $input in the -Command/-EncodedCommand text (AstSearcher.IsUsingDollarInput)
// and, if it is there, reads stdin itself, line by line, decoded with the
// console's input code page (an OEM code page on a default Windows Server),
// which mangles non-ASCII parameters. Without $input in this text the host
// leaves stdin alone, so [Console]::OpenStandardInput() sees every byte.
// Keep the literal "$input" out of this program (a test checks it).
//
// Progress is silenced here as well as in the prelude: 5.1 writes progress
// records as CLIXML to stderr, and this runs before the prelude does.
const bootstrap = `$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$stdin = [Console]::OpenStandardInput()
$buffer = New-Object System.IO.MemoryStream
$stdin.CopyTo($buffer)
$script = [System.Text.Encoding]::UTF8.GetString($buffer.ToArray())
& ([scriptblock]::Create($script))
`

// Bootstrap returns the bootstrap program in clear text (for the grammar
// check and for --show-scripts).
func Bootstrap() string { return bootstrap }

// EncodeCommand returns the base64 of the UTF-16LE encoding of script, the
// form powershell.exe -EncodedCommand expects.
func EncodeCommand(script string) string {
	units := utf16.Encode([]rune(script))
	buf := make([]byte, 2*len(units))
	for i, u := range units {
		binary.LittleEndian.PutUint16(buf[2*i:], u)
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// DecodeCommand is the inverse of EncodeCommand.
func DecodeCommand(encoded string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", fmt.Errorf("decode base64: %w", err)
	}
	if len(raw)%2 != 0 {
		return "", fmt.Errorf("odd UTF-16 byte length %d", len(raw))
	}
	units := make([]uint16, len(raw)/2)
	for i := range units {
		units[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return string(utf16.Decode(units)), nil
}

// CommandLine is the exact command line sent to the node for every op. It
// works with cmd.exe or PowerShell as the default SSH shell: base64 needs no
// quoting in either.
func CommandLine() string {
	return "powershell.exe -NoLogo -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand " + EncodeCommand(bootstrap)
}

// paramsStart and paramsEnd delimit the parameters in the prelude: a
// single-quoted here-string holding compact JSON. Compact JSON never holds a
// raw newline (encoding/json escapes it), so user data can never end the
// here-string early: that is what makes this safe.
const (
	paramsStart = "$SwdtParams = @'\n"
	paramsEnd   = "\n'@ | ConvertFrom-Json\n"
	opHeader    = "# op: "
)

// preludeHead runs before every op body. It defines the helpers ops use to
// report a result (Write-SwdtResult) or a typed failure (Stop-SwdtOp).
//
// Windows PowerShell 5.1 details it deals with:
//   - Setting [Console]::OutputEncoding calls SetConsoleOutputCP, which
//     throws when the process has no console (it depends on how sshd
//     started it); it is best effort, and only affects stray output and how
//     native commands' output is decoded.
//   - The envelope is therefore written as UTF-8 bytes straight to the
//     stdout stream (after flushing [Console]::Out), so it is UTF-8 whatever
//     the console code page is.
//   - 5.1's type data gives System.Array an ETS alias property Count, so
//     ConvertTo-Json serialises a nested or PSObject-wrapped array as
//     {"value":[...],"Count":n}. Removing that type data (absent in 7.x,
//     hence the try) makes arrays plain JSON arrays.
//   - ConvertTo-Json silently turns anything deeper than -Depth into its
//     ToString() (5.1 does not warn), so the depth is generous; ops must
//     still pass plain hashtables, arrays and scalars, never live .NET
//     objects, convert enums and dates to strings themselves, and wrap
//     lists in @() so that a single element stays an array.
//   - A mandatory parameter refuses an empty array or string unless told
//     to allow them.
const preludeHead = `$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
try {
    [Console]::OutputEncoding = New-Object System.Text.UTF8Encoding $false
    $OutputEncoding = [Console]::OutputEncoding
} catch {
    $null = $_
}
try {
    Remove-TypeData -TypeName System.Array -ErrorAction Stop
} catch {
    $null = $_
}

function Write-SwdtEnvelope {
    param([Parameter(Mandatory = $true)] $Envelope)
    $line = '` + ResultMarker + `' + (ConvertTo-Json -InputObject $Envelope -Compress -Depth 20) + [char]13 + [char]10
    $bytes = (New-Object System.Text.UTF8Encoding $false).GetBytes($line)
    [Console]::Out.Flush()
    $stdout = [Console]::OpenStandardOutput()
    $stdout.Write($bytes, 0, $bytes.Length)
    $stdout.Flush()
}

function Write-SwdtResult {
    param([Parameter(Mandatory = $true)] [AllowNull()] [AllowEmptyCollection()] [AllowEmptyString()] $Data)
    Write-SwdtEnvelope -Envelope ([ordered]@{ ok = $true; data = $Data })
}

function Stop-SwdtOp {
    param([Parameter(Mandatory = $true)] [string] $Kind, [Parameter(Mandatory = $true)] [AllowEmptyString()] [string] $Message)
    $exception = New-Object System.Exception $Message
    $exception.Data['swdtKind'] = $Kind
    throw $exception
}

`

const preludeTail = `try {
`

// epilogue turns a terminating error into a failure envelope. The kind set
// by Stop-SwdtOp is looked for along the InnerException chain, because an
// exception thrown inside a script block that .NET invokes (ForEach, a
// delegate, a method call) arrives wrapped in a MethodInvocationException.
//
// exit inside a script block invoked with & from -EncodedCommand ends the
// powershell.exe process with that code (there is no script file boundary
// to stop it), which is how the bootstrap "exits non-zero when the op
// failed".
const epilogue = `
} catch {
    $kind = $null
    $message = $_.Exception.Message
    for ($e = $_.Exception; $null -ne $e; $e = $e.InnerException) {
        if ($e.Data['swdtKind']) {
            $kind = $e.Data['swdtKind']
            $message = $e.Message
            break
        }
    }
    if (-not $kind) {
        $kind = 'exception'
        if ($_.InvocationInfo) { $message = $message + ' (at line ' + $_.InvocationInfo.ScriptLineNumber + ')' }
    }
    Write-SwdtEnvelope -Envelope ([ordered]@{ ok = $false; error = [ordered]@{ kind = [string]$kind; message = [string]$message } })
    exit 1
}
exit 0
`

// Prelude returns the prelude for params, for the grammar check and
// --show-scripts.
func Prelude(params any) (string, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return "", fmt.Errorf("encode op parameters: %w", err)
	}
	if bytes.ContainsAny(raw, "\r\n") {
		// Unreachable with encoding/json; kept as a hard guarantee.
		return "", fmt.Errorf("encoded op parameters contain a line break")
	}
	return preludeHead + paramsStart + string(raw) + paramsEnd + preludeTail, nil
}

// BuildScript assembles what is written to the op's stdin: a header naming
// the op, the prelude carrying params as JSON, the op body, and the epilogue
// that turns any terminating error into a failure envelope.
func BuildScript(op string, body string, params any) ([]byte, error) {
	prelude, err := Prelude(params)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(opHeader + op + "\n")
	b.WriteString(prelude)
	b.WriteString(body)
	b.WriteString(epilogue)
	return []byte(b.String()), nil
}

// ParseScript is the inverse of BuildScript as far as a simulator needs it:
// it returns the op name from the first line and the raw JSON parameters.
func ParseScript(script []byte) (op string, params json.RawMessage, err error) {
	s := string(script)
	first, _, _ := strings.Cut(s, "\n")
	if !strings.HasPrefix(first, opHeader) {
		return "", nil, fmt.Errorf("script does not start with %q", opHeader)
	}
	op = strings.TrimSpace(strings.TrimPrefix(first, opHeader))
	_, rest, ok := strings.Cut(s, paramsStart)
	if !ok {
		return "", nil, fmt.Errorf("op %s: no parameters here-string", op)
	}
	raw, _, ok := strings.Cut(rest, paramsEnd)
	if !ok {
		return "", nil, fmt.Errorf("op %s: unterminated parameters here-string", op)
	}
	if !json.Valid([]byte(raw)) {
		return "", nil, fmt.Errorf("op %s: parameters are not valid JSON", op)
	}
	return op, json.RawMessage(raw), nil
}

// Envelope is the one result line an op prints behind ResultMarker.
type Envelope struct {
	OK    bool            `json:"ok"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error *EnvelopeError  `json:"error,omitempty"`
}

// EnvelopeError is a failed op's typed error.
type EnvelopeError struct {
	// Kind is a short machine-readable class, e.g. "not-found",
	// "access-denied", "timeout", "exception".
	Kind string `json:"kind"`
	// Message is the human-readable detail.
	Message string `json:"message"`
}

// FormatEnvelope renders an envelope line as an op would print it
// (simulators use it; the real node uses the prelude's PowerShell).
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
