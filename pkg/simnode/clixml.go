package simnode

import (
	"fmt"
	"strings"
)

// clixmlError renders an error as powershell.exe does on a redirected
// stderr with -EncodedCommand: a "#< CLIXML" line, then an <Objs> document
// whose <S S="Error"> strings hold the error record's lines, with CR LF
// and other control characters escaped as _xHHHH_.
func clixmlError(op string, message string) string {
	lines := []string{
		"Stop-SwdtOp : " + message,
		"At line:1 char:1",
		"+ " + op,
		"+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
		"    + CategoryInfo          : OperationStopped: (:) [Stop-SwdtOp], Exception",
		"    + FullyQualifiedErrorId : " + op,
		" ",
	}
	var b strings.Builder
	b.WriteString("#< CLIXML\r\n")
	b.WriteString(`<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04">`)
	b.WriteString(`<Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN><MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj>`)
	for _, l := range lines {
		b.WriteString(`<S S="Error">`)
		b.WriteString(clixmlEscape(l + "\r\n"))
		b.WriteString(`</S>`)
	}
	b.WriteString("</Objs>")
	return b.String()
}

// clixmlEscape applies XML escaping and PowerShell's _xHHHH_ encoding of
// control characters (and of a literal "_x" that could be mistaken for
// one).
func clixmlEscape(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '_' && strings.HasPrefix(s[i:], "_x"):
			b.WriteString("_x005F_")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "_x%04X_", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
