// Package redact hides credentials in text that swdt shows: errors, logs,
// progress lines and JSON output.
//
// It must never change text that holds no credentials: what it returns is
// only for people to read, never to fetch or parse.
package redact

import (
	"net/url"
	"strings"
	"unicode"
)

// hidden replaces the user information of a URL.
const hidden = "***"

// URLs returns s with the secrets of every URL in it hidden: the user
// information (user:password@ or token@) becomes ***@, and a query string
// or fragment (tokens, presigned signatures) becomes ?*** or #***. s may
// be a URL or a message that holds URLs; a URL ends at the first white
// space, and its query or fragment also at a quote, an angle bracket or
// a backslash (JSON's escaped quote).
func URLs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			end = len(s)
		}
		if at := userinfoEnd(s[:end]); at >= 0 {
			b.WriteString(hidden)
			s, end = s[at:], end-at
		}
		q := strings.IndexAny(s[:end], "?#")
		if q < 0 {
			continue
		}
		// A URL has no raw backslash: in JSON one escapes the quote
		// that ends it.
		stop := strings.IndexAny(s[q:end], `"'<>\`)
		if stop < 0 {
			stop = end - q
		}
		// Punctuation that ends a message's sentence is not the URL's.
		tail := strings.TrimRight(s[q:q+stop], `.,;:)]}`)
		b.WriteString(s[:q+1])
		if len(tail) > 1 {
			b.WriteString(hidden)
		}
		s = s[q+len(tail):]
	}
	b.WriteString(s)
	return b.String()
}

// userinfoEnd returns the index of the @ that ends the user information in
// rest, the text of a URL after "://", or -1 when it has none.
func userinfoEnd(rest string) int {
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return at
	}
	// A password with an unescaped / ? or # makes the URL invalid, so it
	// is never used, but its text must not show the password either.
	// Punctuation that follows a URL in a message is not part of it.
	if _, err := url.Parse("x://" + strings.TrimRight(rest, `"'.,;:)]}>`)); err != nil {
		return strings.LastIndexByte(rest, '@')
	}
	return -1
}
