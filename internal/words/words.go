// Package words writes counts in English for messages: "1 file",
// "3 files", "2 binaries". Every layer that words a message uses it, so
// that no message says "1 files".
package words

import (
	"fmt"
	"strings"
)

// Count is n and the noun, plural unless n is 1: a noun ending in a
// consonant and y takes -ies, one ending in s, x, ch or sh takes -es.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, Plural(noun))
}

// Plural is the plural of an English noun by the regular rules.
func Plural(noun string) string {
	l := strings.ToLower(noun)
	switch {
	case strings.HasSuffix(l, "y") && len(l) > 1 && !strings.ContainsRune("aeiou", rune(l[len(l)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(l, "s") || strings.HasSuffix(l, "x") || strings.HasSuffix(l, "ch") || strings.HasSuffix(l, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
