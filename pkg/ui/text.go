package ui

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// clean makes s safe to show: text from a node (an op's error, a log line,
// a service name) could otherwise move the cursor, retitle the window,
// hide what follows or paint the terminal. It removes escape sequences
// whole (CSI, OSC and the other ESC forms, and their 8-bit C1 twins), every
// other control character but newline and tab (a carriage return too), and
// the bidirectional overrides that reorder what is shown; invalid UTF-8
// becomes U+FFFD. Every writer of this package applies it, so nothing
// reaches the terminal or a JSON document without it; only Passthrough
// (swdt exec, a program's own bytes) and Out do not.
func clean(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b:
			if i < len(s) {
				i += sequenceLen(s[i], s[i+1:])
			}
		case r >= 0x80 && r <= 0x9f:
			// A C1 control is ESC and the byte 0x40 below it, in one.
			i += max(0, sequenceLen(byte(r-0x40), s[i:])-1)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || bidi(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plain reports whether s has nothing clean would change: printable
// ASCII, newlines and tabs only.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// sequenceLen is how many bytes an escape sequence takes after its ESC:
// intro, the byte after the ESC, and rest, what follows it.
func sequenceLen(intro byte, rest string) int {
	switch {
	case intro == '[':
		// CSI: parameter and intermediate bytes, then a final byte.
		j := 0
		for j < len(rest) && rest[j] >= 0x20 && rest[j] <= 0x3f {
			j++
		}
		if j < len(rest) && rest[j] >= 0x40 && rest[j] <= 0x7e {
			j++
		}
		return 1 + j
	case intro == ']' || intro == 'P' || intro == 'X' || intro == '^' || intro == '_':
		// OSC, DCS, SOS, PM, APC: a string ended by BEL, ST (ESC \ or
		// U+009C); one left open ends at the line's end here.
		for j := 0; j < len(rest); j++ {
			switch {
			case rest[j] == 0x07:
				return 1 + j + 1
			case rest[j] == 0x1b && j+1 < len(rest) && rest[j+1] == '\\':
				return 1 + j + 2
			case strings.HasPrefix(rest[j:], "\u009c"):
				return 1 + j + len("\u009c")
			case rest[j] == '\n':
				return 1 + j
			}
		}
		return 1 + len(rest)
	case intro >= 0x20 && intro <= 0x2f:
		// nF: intermediate bytes, then a final byte.
		j := 0
		for j < len(rest) && rest[j] >= 0x20 && rest[j] <= 0x2f {
			j++
		}
		if j < len(rest) && rest[j] >= 0x30 && rest[j] <= 0x7e {
			j++
		}
		return 1 + j
	case intro >= 0x30 && intro <= 0x7e:
		return 1 // ESC 7, ESC c, ESC M...
	}
	return 0 // a lone ESC: what follows is text
}

// bidi reports the invisible characters that reorder the text around
// them (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, LRM, RLM, ALM).
func bidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// cleanJSON applies clean to every string of an encoded JSON document,
// keys included, keeping its layout and order.
func cleanJSON(data []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(data) {
			break
		}
		lit := data[i : j+1]
		if repl, ok := cleanLiteral(lit); ok {
			out = append(append(out, data[last:i]...), repl...)
			last = j + 1
		}
		i = j
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// cleanLiteral returns the JSON string literal lit with its text cleaned,
// and false when cleaning changes nothing.
func cleanLiteral(lit []byte) ([]byte, bool) {
	if !bytes.ContainsAny(lit, "\\") && plain(string(lit)) {
		return nil, false
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return nil, false
	}
	c := clean(s)
	if c == s {
		return nil, false
	}
	repl, err := json.Marshal(c)
	if err != nil {
		return nil, false
	}
	return repl, true
}
