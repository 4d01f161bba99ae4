package pwsh

import (
	"strings"
	"testing"
)

// objs opens a CLIXML document the way powershell.exe writes it.
const objs = `<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04">`

// progress51 is the record Windows PowerShell 5.1 writes on its first module
// load, before any op code can set $ProgressPreference.
const progress51 = `<Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN><MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj>`

// escapeForCLIXML serialises s as the PowerShell serialiser does for a
// string record: XML escapes, control characters as _xHHHH_, and a literal
// "_x" protected as "_x005F_x".
func escapeForCLIXML(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' && strings.HasPrefix(s[i+1:], "x"):
			b.WriteString("_x005F_")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r < 0x20:
			b.WriteString("_x00" + strings.ToUpper(string("0123456789abcdef"[r>>4])+string("0123456789abcdef"[r&15])) + "_")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDecodeCLIXML(t *testing.T) {
	inner := "#< CLIXML\r\n" + objs + `<S S="Error">choco.exe : inner failure_x000D__x000A_</S></Objs>`
	var nested strings.Builder
	nested.WriteString("#< CLIXML\r\n" + objs)
	for _, line := range strings.SplitAfter(inner, "\r\n") {
		nested.WriteString(`<S S="Error">` + escapeForCLIXML(line) + `</S>`)
	}
	nested.WriteString(`</Objs>`)

	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain text is trimmed", "  fatal: not a git repository\r\n", "fatal: not a git repository"},
		{"plain text with markup", "a <b> & c\n", "a <b> & c"},
		{"progress only (5.1 first module load)", "#< CLIXML\r\n" + objs + progress51 + "</Objs>", ""},
		{
			// Windows PowerShell 5.1: one record per line of the error
			// view, after the progress record.
			"5.1 error view",
			"#< CLIXML\r\n" + objs + progress51 +
				`<S S="Error">no-such-cmd : The term 'no-such-cmd' is not recognized as the name of a cmdlet, function, script file, or operable _x000D__x000A_</S>` +
				`<S S="Error">program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again._x000D__x000A_</S>` +
				`<S S="Error">At line:1 char:1_x000D__x000A_</S><S S="Error">+ no-such-cmd_x000D__x000A_</S><S S="Error">+ ~~~~~~~~~~~_x000D__x000A_</S>` +
				`<S S="Error">    + CategoryInfo          : ObjectNotFound: (no-such-cmd:String) [], CommandNotFoundException_x000D__x000A_</S>` +
				`<S S="Error">    + FullyQualifiedErrorId : CommandNotFoundException_x000D__x000A_</S><S S="Error"> _x000D__x000A_</S></Objs>`,
			"no-such-cmd : The term 'no-such-cmd' is not recognized as the name of a cmdlet, function, script file, or operable\n" +
				"program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.\n" +
				"At line:1 char:1\n+ no-such-cmd\n+ ~~~~~~~~~~~\n" +
				"    + CategoryInfo          : ObjectNotFound: (no-such-cmd:String) [], CommandNotFoundException\n" +
				"    + FullyQualifiedErrorId : CommandNotFoundException",
		},
		{
			"streams are labelled",
			"#< CLIXML\n" + objs + `<S S="warning">disk almost full</S><S S="verbose">copying</S><S S="debug">d</S><S S="Error">Write-Error: bad &amp; &lt;worse&gt;_x000A_</S></Objs>`,
			"WARNING: disk almost full\nVERBOSE: copying\nDEBUG: d\nWrite-Error: bad & <worse>",
		},
		{
			"escapes: literal underscore, tab, non-ASCII, surrogate pair, lone surrogate",
			"#< CLIXML\r\n" + objs + `<S S="Error">C:\k\my_x005F_x0041_file é ✓ _xD83D__xDE00_ tab_x0009_end _xD83D_!</S></Objs>`,
			"C:\\k\\my_x0041_file é ✓ 😀 tab\tend \uFFFD!",
		},
		{
			"escapes that are not escapes stay",
			"#< CLIXML\r\n" + objs + `<S S="Error">_x00G1_ _x41 x0041_</S></Objs>`,
			"_x00G1_ _x41 x0041_",
		},
		{
			"pwsh 7 colour escapes are dropped",
			"#< CLIXML\n" + objs + `<S S="Error">_x001B_[31;1mException: _x001B_[31;1mstopped: 100% &lt;done&gt;_x001B_[0m_x000A_</S></Objs>`,
			"Exception: stopped: 100% <done>",
		},
		{
			"two headers, two documents",
			"#< CLIXML\r\n#< CLIXML\r\n" + objs + `<S S="Error">one</S></Objs>` + objs + `<S S="Error">two</S></Objs>`,
			"one\ntwo",
		},
		{
			"concatenated documents with text between",
			"#< CLIXML\r\n" + objs + progress51 + "</Objs>\r\nnative tool: warning\r\n#< CLIXML\r\n" + objs + `<S S="Error">boom_x000D__x000A_</S></Objs>`,
			"native tool: warning\nboom",
		},
		{
			"native text inside the header's line run",
			"#< CLIXML\r\nOpenProcess(child) failed (Win32 error 87)\r\n" + objs + progress51 + "</Objs>",
			"OpenProcess(child) failed (Win32 error 87)",
		},
		{
			"cut off mid-record",
			"#< CLIXML\r\n" + objs + `<S S="Error">one_x000D__x000A_</S><S S="Error">tw`,
			"one\ntw",
		},
		{
			"cut off inside a progress record",
			"#< CLIXML\r\n" + objs + `<S S="Error">one</S><Obj S="progress" RefId="0"><TN>`,
			"one",
		},
		{
			"information record shown by its ToString",
			"#< CLIXML\r\n" + objs + `<Obj S="information" RefId="0"><TN RefId="0"><T>System.Management.Automation.InformationRecord</T></TN><ToString>hello from Write-Host</ToString><Props><Obj N="MessageData" RefId="1"><ToString>ignored</ToString></Obj></Props></Obj></Objs>`,
			"hello from Write-Host",
		},
		{"nested CLIXML escaped in error records", nested.String(), "choco.exe : inner failure"},
		{"text before the header", "warming up\r\n#< CLIXML\r\n" + objs + `<S S="Error">x</S></Objs>`, "warming up\nx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecodeCLIXML(tt.in)
			if got != tt.want {
				t.Errorf("DecodeCLIXML:\n got %q\nwant %q", got, tt.want)
			}
			if strings.Contains(tt.in, clixmlHeader) && (strings.Contains(got, "CLIXML") || strings.Contains(got, "_x000")) {
				t.Errorf("decoded text still holds CLIXML: %q", got)
			}
		})
	}
}

func TestUnescapeCLIXML(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"plain":            "plain",
		"_x000D__x000A_":   "\r\n",
		"_x005F_":          "_",
		"a_x005F_x000D_b":  "a_x000D_b",
		"_x0041__x0042_":   "AB",
		"_x0041":           "_x0041",
		"__x0041_":         "_A",
		"_xDC00_":          "\uFFFD",
		"_xd83d__xde00_ok": "😀ok",
	} {
		if got := unescapeCLIXML(in); got != want {
			t.Errorf("unescapeCLIXML(%q) = %q, want %q", in, got, want)
		}
	}
}
