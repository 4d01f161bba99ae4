package ui

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

func TestClean(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text is kept", "kubelet: Running\n\tdone", "kubelet: Running\n\tdone"},
		{"unicode is kept", "Администратор ✔ 日本", "Администратор ✔ 日本"},
		{"colour (CSI SGR)", "\x1b[31mred\x1b[0m text", "red text"},
		{"cursor movement and erase", "a\x1b[2J\x1b[1;1Hb\x1b[K", "ab"},
		{"window title (OSC ended by BEL)", "\x1b]0;owned\x07after", "after"},
		{"hyperlink (OSC ended by ST)", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"an OSC left open ends at the line's end", "\x1b]0;title\nnext", "\nnext"},
		{"charset (nF) and keypad (Fp) forms", "\x1b(Bx\x1b=y\x1bcz", "xyz"},
		{"8-bit CSI (C1)", "a\u009b31mb", "ab"},
		{"8-bit OSC (C1) ended by ST", "a\u009d0;t\u009cb", "ab"},
		{"carriage return overwriting the line", "safe\rEVIL", "safeEVIL"},
		{"CRLF becomes LF", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"bell, backspace, NUL, DEL", "a\x07b\x08c\x00d\x7fe", "abcde"},
		{"bidi overrides", "file\u202egnp.exe", "filegnp.exe"},
		{"a lone ESC at the end", "end\x1b", "end"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("%s: clean(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// hostile is text a node could send: colour, a screen clear, a window
// title, a line overwrite, a bell.
const hostile = "op failed\x1b[2J\x1b]0;pwned\x07\r\x1b[31mall good\x07\u009b1m"

// noControls fails unless s holds no control character but newline and
// tab (and no ESC at all).
func noControls(t *testing.T, where, s string) {
	t.Helper()
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			t.Errorf("%s holds the control character %U: %q", where, r, s)
			return
		}
	}
}

// Whatever swdt prints, text from a node reaches the terminal and JSON
// stripped of control characters.
func TestOutputIsCleaned(t *testing.T) {
	u, out, errb := newTest(Options{})
	u.Error("node winworker: %s", hostile)
	u.Warn("%s", hostile)
	u.Step("winworker", "%s", hostile)
	p := u.NewProgress()
	p.Step("winworker", "%s", hostile)
	p.Warn("%s", hostile)
	noControls(t, "stderr", errb.String())
	if !strings.Contains(errb.String(), "op failedall good") {
		t.Errorf("stderr lost the text around the escapes: %q", errb.String())
	}

	u.Printf("%s\n", hostile)
	if err := u.Table([]string{"NODE", "ERROR"}, [][]string{{"winworker", hostile}}); err != nil {
		t.Fatal(err)
	}
	noControls(t, "stdout", out.String())

	out.Reset()
	doc := map[string]any{"error": hostile, "lines": []string{"ok\tline", "a\x1b[1mb"}, hostile: 1}
	if err := u.JSON(doc); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("the cleaned document is not JSON: %v\n%s", err, out.String())
	}
	raw, _ := json.Marshal(back)
	for k, v := range back {
		noControls(t, "a JSON key", k)
		if s, ok := v.(string); ok {
			noControls(t, "a JSON string", s)
		}
	}
	if back["error"] != "op failedall good" || !strings.Contains(string(raw), `["ok\tline","ab"]`) {
		t.Errorf("JSON = %s, want the strings cleaned and kept", raw)
	}
}

// A document without anything to clean is written as encoded.
func TestCleanJSONKeepsCleanDocuments(t *testing.T) {
	in := []byte(`{"a": "x \u003c y \"q\" \\ \n", "b": ["\t", 1, true, null], "c": "日本"}`)
	if got := cleanJSON(in); string(got) != string(in) {
		t.Errorf("cleanJSON changed a clean document:\n%s\n%s", in, got)
	}
}
