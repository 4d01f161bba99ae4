package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func newTest(opts Options) (*UI, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return New(&out, &errb, opts), &out, &errb
}

func TestStatusLinesGoToStderr(t *testing.T) {
	u, out, errb := newTest(Options{})
	u.Step("winworker", "staging %s", "kubelet.exe")
	u.Success("done")
	u.Warn("careful")
	u.Error("broken:\n  detail")
	want := "▶ node winworker: staging kubelet.exe\n✔ done\n! warning: careful\n✖ error: broken:\n    detail\n"
	if errb.String() != want {
		t.Errorf("stderr = %q, want %q", errb.String(), want)
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", out.String())
	}
}

func TestColor(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	tests := []struct {
		mode ColorMode
		want bool
	}{
		{ColorAuto, false}, // a buffer is not a terminal
		{ColorNever, false},
		{ColorAlways, true},
	}
	for _, tt := range tests {
		u, out, errb := newTest(Options{Color: tt.mode})
		u.Success("ok")
		if err := u.Table([]string{"A", "B"}, [][]string{{"1", "2"}}); err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]string{"stderr": errb.String(), "stdout": out.String()} {
			if got := strings.Contains(s, "\x1b["); got != tt.want {
				t.Errorf("mode %d: %s coloured = %v, want %v: %q", tt.mode, name, got, tt.want, s)
			}
		}
	}
}

func TestNoColorEnvOverridesTerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	if useColor(ColorAuto, nil) {
		t.Error("NO_COLOR set but colour on")
	}
}

func TestTableAligns(t *testing.T) {
	u, out, _ := newTest(Options{})
	if err := u.Table([]string{"NODE", "HOST"}, [][]string{{"winworker", "10.0.0.5:22"}, {"w2", "h"}}); err != nil {
		t.Fatal(err)
	}
	want := "NODE       HOST\nwinworker  10.0.0.5:22\nw2         h\n"
	if out.String() != want {
		t.Errorf("table = %q, want %q", out.String(), want)
	}
}

func TestJSON(t *testing.T) {
	u, out, _ := newTest(Options{Format: FormatJSON})
	if u.Format() != FormatJSON {
		t.Fatalf("format = %s", u.Format())
	}
	if err := u.JSON(map[string]any{"a": []int{1}}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{\n  \"a\": [\n    1\n  ]\n}\n" {
		t.Errorf("json = %q", out.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Error(err)
	}
	if err := u.JSON(func() {}); err == nil {
		t.Error("JSON of a func must fail")
	}
}

func TestDefaultFormatAndPrintf(t *testing.T) {
	u, out, _ := newTest(Options{})
	if u.Format() != FormatText {
		t.Errorf("default format = %s", u.Format())
	}
	u.Printf("x=%d\n", 1)
	if out.String() != "x=1\n" || u.Out() != out {
		t.Errorf("stdout = %q", out.String())
	}
}

func TestLoggerLevels(t *testing.T) {
	for v, want := range map[int][]string{
		0: {"level=WARN"},
		1: {"level=WARN", "level=INFO"},
		2: {"level=WARN", "level=INFO", "level=DEBUG"},
		5: {"level=WARN", "level=INFO", "level=DEBUG"},
	} {
		u, _, errb := newTest(Options{Verbosity: v})
		l := u.Logger()
		l.Debug("d")
		l.Info("i")
		l.Warn("w")
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if len(lines) != len(want) {
			t.Fatalf("-v=%d: logged %q", v, errb.String())
		}
		for _, w := range want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("-v=%d: %q missing %s", v, errb.String(), w)
			}
		}
		if strings.Contains(errb.String(), "time=") {
			t.Errorf("log lines carry timestamps: %q", errb.String())
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"text", "json"} {
		if f, err := ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	if _, err := ParseFormat("yaml"); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("ParseFormat(yaml) error = %v", err)
	}
}

func TestConcurrentStatusLines(t *testing.T) {
	u, _, errb := newTest(Options{Verbosity: 2})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				u.Step(fmt.Sprintf("n%d", i), "working")
				u.Logger().Debug("logged")
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if l != "level=DEBUG msg=logged" && (!strings.HasPrefix(l, "▶ node n") || !strings.HasSuffix(l, ": working")) {
			t.Errorf("torn line %q", l)
		}
	}
}

// DESIGN.md §9: the user and password of a URL never reach the terminal,
// whichever way a message takes.
func TestURLCredentialsNeverShown(t *testing.T) {
	const url = "https://alice:s3cr3t@example.com/kubelet.exe"
	const shown = "https://***@example.com/kubelet.exe"
	for _, format := range Formats {
		u, out, errb := newTest(Options{Format: format, Verbosity: 2})
		u.Step("winworker", "download %s", url)
		u.Success("got %s", url)
		u.Warn("slow %s", url)
		u.Error("download %s: server answered 401", url)
		u.Printf("%s\n", url)
		u.Logger().Debug("fetching", "url", url, "err", fmt.Errorf("Get %q: EOF", url))
		if err := u.Table([]string{"SOURCE"}, [][]string{{url}}); err != nil {
			t.Fatal(err)
		}
		if err := u.JSON(map[string]string{"error": "source " + url + ": not found"}); err != nil {
			t.Fatal(err)
		}
		p := u.NewProgress()
		p.Step("winworker", "download %s", url)
		p.Note("download %s", url)
		p.Warn("download %s", url)
		tr := p.Transfer("download "+url, 10)
		tr.Update(10)
		for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
			if strings.Contains(s, "alice") || strings.Contains(s, "s3cr3t") {
				t.Errorf("-o %s: %s shows the URL's credentials:\n%s", format, name, s)
			}
			if !strings.Contains(s, shown) {
				t.Errorf("-o %s: %s does not show the URL as %s:\n%s", format, name, shown, s)
			}
		}
	}
}
