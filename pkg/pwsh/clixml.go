package pwsh

import (
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// clixmlHeader starts every CLIXML document powershell.exe writes to a
// redirected stderr when it was started with -EncodedCommand.
const clixmlHeader = "#< CLIXML"

// maxCLIXMLNesting bounds how often DecodeCLIXML looks into a record that
// itself holds CLIXML (powershell.exe run by an op writes its own CLIXML to
// stderr, which the outer powershell.exe re-serialises as error records).
const maxCLIXMLNesting = 4

// streamPrefix labels records of the streams that are not errors, the way
// the console shows them. Stream names are compared in lower case: 5.1
// writes "Error" but "warning", "verbose", "debug".
var streamPrefix = map[string]string{
	"error":       "",
	"warning":     "WARNING: ",
	"verbose":     "VERBOSE: ",
	"debug":       "DEBUG: ",
	"information": "",
	"info":        "",
	"output":      "",
}

// DecodeCLIXML turns powershell.exe's "#< CLIXML" stderr into readable
// text. Input that is not CLIXML is returned trimmed.
//
// Windows PowerShell 5.1 serialises each line of the error view as its own
// <S S="Error"> record, escaping control characters as _xHHHH_ (so a line
// ends in _x000D__x000A_), and writes progress records (<Obj S="progress">,
// e.g. "Preparing modules for first use.") that are noise here. Stderr may
// also hold several documents, plain text that a native program wrote
// between them, a document cut off mid-write, or CLIXML escaped inside an
// error record; all are decoded as far as they go, never rejected.
func DecodeCLIXML(stderr string) string {
	return decodeCLIXML(stderr, 0)
}

func decodeCLIXML(stderr string, depth int) string {
	if !strings.Contains(stderr, clixmlHeader) {
		if depth == 0 {
			return strings.TrimSpace(stderr)
		}
		return cleanText(stderr)
	}
	if depth > maxCLIXMLNesting {
		return cleanText(stderr)
	}
	var out []string
	for i, part := range strings.Split(stderr, clixmlHeader) {
		if i == 0 {
			out = append(out, part) // text before the first document
			continue
		}
		out = append(out, decodeDocuments(part)...)
	}
	text := strings.Join(out, "\n")
	if strings.Contains(text, clixmlHeader) {
		// A record carried a whole CLIXML stream of its own.
		return decodeCLIXML(text, depth+1)
	}
	return cleanText(text)
}

// decodeDocuments decodes the <Objs> documents in s (the text after one
// "#< CLIXML" header) and keeps any text around them as it is.
func decodeDocuments(s string) []string {
	var out []string
	for s != "" {
		start := strings.Index(s, "<Objs")
		if start < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:start])
		s = s[start:]
		block := s
		if end := strings.Index(s, "</Objs>"); end >= 0 {
			block = s[:end+len("</Objs>")]
		}
		s = s[len(block):]
		records := decodeObjs(block)
		if len(records) == 0 && !strings.Contains(block, "<S") && !strings.Contains(block, "<Obj") {
			// Not a document we understand: show it rather than lose it.
			out = append(out, block)
			continue
		}
		out = append(out, records...)
	}
	return out
}

// decodeObjs returns the readable records of one <Objs> document, in order.
// It stops quietly at the first syntax error or at a cut-off end, keeping
// what it decoded so far.
func decodeObjs(block string) []string {
	dec := xml.NewDecoder(strings.NewReader(block))
	dec.Strict = false // tolerate stray '&' and '<' from native programs
	var (
		out     []string
		depth   int    // element depth; <Objs> is 1
		inS     bool   // inside a top-level <S S="stream"> record
		stream  string // its stream name, lower case
		text    strings.Builder
		skipObj bool // inside an <Obj> whose text is not wanted
		objTS   bool // inside an <Obj>'s <ToString>
		obj     strings.Builder
	)
	flushS := func() {
		if inS {
			out = append(out, label(stream, unescapeCLIXML(text.String())))
			inS = false
			text.Reset()
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			// io.EOF, a cut-off document or a syntax error: keep what
			// there is, including a record cut off mid-text.
			flushS()
			return out
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth != 2 {
				if depth >= 3 && !skipObj && t.Name.Local == "ToString" && obj.Len() == 0 {
					objTS = true
				}
				continue
			}
			switch t.Name.Local {
			case "S":
				inS = true
				stream = strings.ToLower(attr(t, "S"))
				text.Reset()
			case "Obj":
				s := strings.ToLower(attr(t, "S"))
				// Progress records are noise; other typed records (5.1's
				// information records) are shown by their ToString.
				skipObj = s == "progress" || s == ""
				stream = s
				obj.Reset()
			}
		case xml.EndElement:
			if depth == 2 {
				switch t.Name.Local {
				case "S":
					flushS()
				case "Obj":
					if !skipObj && obj.Len() > 0 {
						out = append(out, label(stream, unescapeCLIXML(obj.String())))
					}
					skipObj, objTS = false, false
				}
			}
			if t.Name.Local == "ToString" {
				objTS = false
			}
			depth--
		case xml.CharData:
			switch {
			case inS:
				text.Write(t)
			case objTS && !skipObj:
				obj.Write(t)
			case depth == 1 && strings.TrimSpace(string(t)) != "":
				// Plain text written among the records.
				out = append(out, string(t))
			}
		}
	}
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// label prefixes a record with its stream's console label ("WARNING: ").
func label(stream, text string) string {
	prefix, ok := streamPrefix[stream]
	if !ok && stream != "" {
		prefix = strings.ToUpper(stream) + ": "
	}
	if prefix == "" || strings.TrimSpace(text) == "" {
		return text
	}
	return prefix + text
}

// unescapeCLIXML undoes the serialiser's _xHHHH_ escapes of UTF-16 code
// units in one left-to-right pass, so "_x005F_x0041_" (an escaped literal
// underscore followed by "x0041_") becomes "_x0041_", not "A". A surrogate
// pair escaped as two units is joined; a lone surrogate becomes U+FFFD.
func unescapeCLIXML(s string) string {
	if !strings.Contains(s, "_x") {
		return s
	}
	var b strings.Builder
	var units []uint16
	flush := func() {
		if len(units) > 0 {
			b.WriteString(string(utf16.Decode(units)))
			units = units[:0]
		}
	}
	for i := 0; i < len(s); {
		if u, ok := escapeAt(s, i); ok {
			units = append(units, u)
			i += 7
			continue
		}
		flush()
		b.WriteByte(s[i])
		i++
	}
	flush()
	return b.String()
}

// escapeAt reports the code unit of an _xHHHH_ escape starting at s[i].
func escapeAt(s string, i int) (uint16, bool) {
	if i+7 > len(s) || s[i] != '_' || s[i+1] != 'x' || s[i+6] != '_' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
	if err != nil {
		return 0, false
	}
	return uint16(v), true
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// cleanText normalises line ends, drops colour escapes (PowerShell 7 puts
// them in its error view), trailing blanks and empty lines.
func cleanText(s string) string {
	s = ansiEscape.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" {
			continue
		}
		kept = append(kept, l)
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}
