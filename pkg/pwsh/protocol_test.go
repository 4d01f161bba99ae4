package pwsh

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEncodeCommandRoundTrip(t *testing.T) {
	for _, s := range []string{
		"",
		"dir",
		"Get-Service | Where-Object Status -eq 'Running'\r\n",
		"Grüße, 日本語, emoji 😀 (a surrogate pair), \u2028 and NUL \x00",
		Bootstrap(),
	} {
		enc := EncodeCommand(s)
		got, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("DecodeCommand(EncodeCommand(%q)): %v", s, err)
		}
		if got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
	// A known vector: powershell.exe -EncodedCommand ZABpAHIA runs "dir".
	if got := EncodeCommand("dir"); got != "ZABpAHIA" {
		t.Errorf(`EncodeCommand("dir") = %q, want ZABpAHIA`, got)
	}
	// A character outside the BMP takes two UTF-16 units (8 base64 chars).
	if got := EncodeCommand("😀"); got != "Pdg=" && got != "PdgA3g==" {
		t.Errorf(`EncodeCommand("😀") = %q, want the UTF-16LE surrogate pair 3D D8 00 DE`, got)
	}
}

func TestDecodeCommandErrors(t *testing.T) {
	for _, in := range []string{"not base64!", "YQ=="} { // YQ== is one byte
		if _, err := DecodeCommand(in); err == nil {
			t.Errorf("DecodeCommand(%q) succeeded, want an error", in)
		}
	}
}

func TestCommandLine(t *testing.T) {
	const prefix = "powershell.exe -NoLogo -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand "
	cl := CommandLine()
	if !strings.HasPrefix(cl, prefix) {
		t.Fatalf("CommandLine() = %q, want prefix %q", cl, prefix)
	}
	// Base64 needs no quoting in cmd.exe or PowerShell: nothing else may
	// appear on the command line.
	if !regexp.MustCompile(`^[A-Za-z0-9+/=]+$`).MatchString(strings.TrimPrefix(cl, prefix)) {
		t.Errorf("encoded bootstrap holds characters outside base64: %q", cl)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9+/= .-]+$`).MatchString(cl) {
		t.Errorf("command line holds characters outside [A-Za-z0-9+/= .-]: %q", cl)
	}
	if len(cl) >= 8191 {
		t.Errorf("command line is %d characters, over cmd.exe's limit", len(cl))
	}
	got, err := DecodeCommand(strings.TrimPrefix(cl, prefix))
	if err != nil || got != Bootstrap() {
		t.Errorf("encoded bootstrap decodes to %q, %v; want Bootstrap()", got, err)
	}
}

// The console host reads stdin itself when the command text uses $input;
// the bootstrap must read the raw bytes instead (see bootstrap's comment).
func TestBootstrapLeavesStdinToTheScript(t *testing.T) {
	if strings.Contains(strings.ToLower(Bootstrap()), "$input") {
		t.Errorf("bootstrap mentions $input; powershell.exe would consume stdin before the bootstrap reads it")
	}
}

// hostile strings that would break out of a badly quoted prelude.
var hostile = []string{
	"'@",
	"\n'@\nRemove-Item -Recurse C:\\\n@'\n",
	"\r'@ | Remove-Item C:\\",
	"$(Remove-Item C:\\)",
	"`whoami`; `$env:PATH",
	"\"; Remove-Item C:\\",
	"’@\n‘@", // PowerShell treats Unicode single quotes like '
	"\u2028'@\u2029'@\u0085'@",
	"vim; Remove-Item -Recurse C:\\",
	"@\"\n\"@",
	"C:\\Program Files\\containerd\\containerd.exe",
	"Grüße 😀",
}

func TestBuildScriptKeepsParamsInsideHereString(t *testing.T) {
	for _, h := range hostile {
		params := map[string]any{"value": h, "list": []string{h, h}, "nested": map[string]string{h: h}}
		want, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		script, err := BuildScript("sample-op", "Write-SwdtResult -Data $SwdtParams.value\n", params)
		if err != nil {
			t.Fatalf("BuildScript(%q): %v", h, err)
		}
		if !utf8.Valid(script) {
			t.Errorf("script for %q is not valid UTF-8", h)
		}
		op, raw, err := ParseScript(script)
		if err != nil {
			t.Fatalf("ParseScript for %q: %v", h, err)
		}
		if op != "sample-op" {
			t.Errorf("op = %q, want sample-op", op)
		}
		if string(raw) != string(want) {
			t.Errorf("params for %q:\n got %s\nwant %s", h, raw, want)
		}
		// The here-string holds exactly one line, and the only line that
		// could end it is the prelude's own terminator.
		lines := strings.Split(string(script), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "$SwdtParams = @'") {
				if lines[i+1] != string(want) || !strings.HasPrefix(lines[i+2], "'@ | ConvertFrom-Json") {
					t.Errorf("here-string for %q is not one JSON line followed by its terminator:\n%s", h, strings.Join(lines[i:i+3], "\n"))
				}
			}
			trimmed := strings.TrimLeft(l, " \t")
			for _, q := range []string{"'@", "’@", "‘@", "‚@", "‛@"} {
				if strings.HasPrefix(trimmed, q) && !strings.HasPrefix(l, "'@ | ConvertFrom-Json") {
					t.Errorf("line %d of the script for %q could end a here-string: %q", i+1, h, l)
				}
			}
			// PowerShell's tokenizer ends a line only at \r or \n
			// (CharExtensions.IsNewLine); encoding/json also escapes
			// U+2028/U+2029, which other readers treat as line ends.
			if strings.ContainsAny(l, "\r\u2028\u2029") {
				t.Errorf("line %d of the script for %q holds a raw line separator: %q", i+1, h, l)
			}
		}
	}
}

func TestPrelude(t *testing.T) {
	p, err := Prelude(struct {
		Name string `json:"name"`
	}{"x'@y"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"$ErrorActionPreference = 'Stop'",
		"$ProgressPreference = 'SilentlyContinue'",
		"$SwdtParams = @'\n{\"name\":\"x'@y\"}\n'@ | ConvertFrom-Json\n",
		"function Write-SwdtResult",
		"function Stop-SwdtOp",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prelude lacks %q", want)
		}
	}
	if _, err := Prelude(make(chan int)); err == nil {
		t.Error("Prelude accepted parameters JSON cannot encode")
	}
}

func TestParseScriptErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no header":        "$SwdtParams = @'\n{}\n'@ | ConvertFrom-Json\n",
		"no here-string":   "# op: x\nWrite-Output 1\n",
		"unterminated":     "# op: x\n$SwdtParams = @'\n{}\n",
		"not JSON":         "# op: x\n$SwdtParams = @'\n{nope\n'@ | ConvertFrom-Json\n",
		"empty":            "",
		"header not first": "\n# op: x\n$SwdtParams = @'\n{}\n'@ | ConvertFrom-Json\n",
	} {
		if _, _, err := ParseScript([]byte(in)); err == nil {
			t.Errorf("%s: ParseScript succeeded, want an error", name)
		}
	}
}

func TestParseEnvelope(t *testing.T) {
	ok := ResultMarker + `{"ok":true,"data":{"n":1}}`
	tests := []struct {
		name     string
		in       string
		wantErr  string
		wantOK   bool
		wantData string
		wantKind string
	}{
		{name: "alone", in: ok + "\n", wantOK: true, wantData: `{"n":1}`},
		{name: "no trailing newline", in: ok, wantOK: true, wantData: `{"n":1}`},
		{name: "CRLF", in: "hello\r\n" + ok + "\r\n", wantOK: true, wantData: `{"n":1}`},
		{name: "stray output before and after", in: "Preparing...\nWARNING: x\n" + ok + "\nbye\n{\"ok\":false}\n", wantOK: true, wantData: `{"n":1}`},
		{name: "stray text on the same line before the marker", in: "partial" + ok + "\r\n", wantOK: true, wantData: `{"n":1}`},
		{name: "several markers: last wins", in: ok + "\n" + ResultMarker + `{"ok":false,"error":{"kind":"timeout","message":"slow"}}` + "\n", wantKind: "timeout"},
		{name: "failure", in: ResultMarker + `{"ok":false,"error":{"kind":"not-found","message":"no service"}}` + "\r\n", wantKind: "not-found"},
		{name: "null data", in: ResultMarker + `{"ok":true,"data":null}`, wantOK: true, wantData: "null"},
		{name: "non-ASCII", in: ResultMarker + `{"ok":true,"data":"Grüße 😀"}`, wantOK: true, wantData: `"Grüße 😀"`},
		{name: "missing marker", in: `{"ok":true,"data":1}` + "\n", wantErr: "no result line"},
		{name: "empty", in: "", wantErr: "no result line"},
		{name: "bad JSON", in: ResultMarker + `{"ok":tru` + "\n", wantErr: "decode result line"},
		{name: "ok:false without error", in: ResultMarker + `{"ok":false}` + "\n", wantErr: "without an error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := ParseEnvelope([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseEnvelope error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEnvelope: %v", err)
			}
			if env.OK != tt.wantOK {
				t.Errorf("OK = %v, want %v", env.OK, tt.wantOK)
			}
			if tt.wantOK && string(env.Data) != tt.wantData {
				t.Errorf("Data = %s, want %s", env.Data, tt.wantData)
			}
			if !tt.wantOK && (env.Error == nil || env.Error.Kind != tt.wantKind) {
				t.Errorf("Error = %+v, want kind %q", env.Error, tt.wantKind)
			}
		})
	}
}

func TestParseEnvelopeLongLine(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	line, err := FormatEnvelope(Envelope{OK: true, Data: json.RawMessage(`"` + big + `"`)})
	if err != nil {
		t.Fatal(err)
	}
	env, err := ParseEnvelope(line)
	if err != nil || len(env.Data) != len(big)+2 {
		t.Fatalf("1 MiB result line: %v", err)
	}
}

func TestFormatEnvelopeRoundTrip(t *testing.T) {
	for _, in := range []Envelope{
		{OK: true, Data: json.RawMessage(`{"hostname":"win-1"}`)},
		{OK: true},
		{OK: false, Error: &EnvelopeError{Kind: "access-denied", Message: "Zugriff verweigert ✓\nline 2"}},
	} {
		line, err := FormatEnvelope(in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(line), ResultMarker) || !strings.HasSuffix(string(line), "\r\n") || strings.Count(string(line), "\n") != 1 {
			t.Errorf("FormatEnvelope = %q, want one marker line", line)
		}
		out, err := ParseEnvelope(append([]byte("noise\r\n"), line...))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(in)
		b, _ := json.Marshal(out)
		if string(a) != string(b) {
			t.Errorf("round trip: got %s, want %s", b, a)
		}
	}
}
