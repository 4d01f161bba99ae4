package winname

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		want Rule
	}{
		{"kubelet.exe", ""},
		{"notes v2.txt", ""},
		{"ÄÖÜ 日本.log", ""},
		{"COM10", ""},
		{"console.log", ""},
		{".hidden", ""},
		{"", RuleEmpty},
		{".", RuleDots},
		{"..", RuleDots},
		{`..\..\x`, RuleSeparator},
		{"a/b", RuleSeparator},
		{`C:\x`, RuleSeparator},
		{"C:x", RuleReserved},
		{"file.txt:stream", RuleReserved},
		{"a*b", RuleReserved},
		{"bell\x07", RuleControl},
		{"new\nline", RuleControl},
		{"kubelet\u202Eexe.txt", RuleControl},
		{"zero\u200Bwidth", RuleControl},
		{"del\x7f", RuleControl},
		{"c1\u0085", RuleControl},
		{"bad\xffutf8", RuleControl},
		{"trailing.", RuleTrailing},
		{"trailing ", RuleTrailing},
		{"CON", RuleDevice},
		{"con.txt", RuleDevice},
		{"NUL .log", RuleDevice},
		{"COM0", RuleDevice},
		{"lpt9.x.y", RuleDevice},
		{"COM¹", RuleDevice},
		{"LPT³.txt", RuleDevice},
		{"CONIN$", RuleDevice},
		{"conout$.log", RuleDevice},
		{strings.Repeat("a", 255), ""},
		{strings.Repeat("a", 256), RuleTooLong},
		{strings.Repeat("😀", 128), RuleTooLong},
	}
	for _, tt := range tests {
		err := Check(tt.name)
		var e *Error
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tt.name, err)
		case tt.want != "" && (!errors.As(err, &e) || e.Rule != tt.want):
			t.Errorf("Check(%q) = %v, want rule %s", tt.name, err, tt.want)
		}
	}
}

func TestShortAlias(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"PROGRA~1", true},
		{"progra~1", true},
		{"KUBELE~2.EXE", true},
		{"A~123456", true},
		{"kubelet.exe", false},
		{"Program Files", false},
		{"backup~old", false},
		{"ABCDEFG~1", false},    // seven characters before the tilde: no generated name
		{"ABCDE~1.EXEC", false}, // a four-character extension
		{"~1", false},
		{"a~1~2", false},
	} {
		if got := ShortAlias(tt.name); got != tt.want {
			t.Errorf("ShortAlias(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
