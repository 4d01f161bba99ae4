package config

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

// knownFields are the JSON names of every field of the Node API, the
// candidates for "did you mean" hints.
var knownFields = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[v1alpha1.Node]().PkgPath() {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && !seen[name] {
				seen[name] = true
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[v1alpha1.NodeList]())
	names := []string{"apiVersion", "kind", "metadata", "name"}
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
})

// suggest returns the known field name closest to an unknown one, or "" when
// none is close enough to be a typo.
func suggest(unknown string) string {
	return Closest(unknown, knownFields())
}

// Closest returns the candidate closest to name when it is close enough
// to be a typo of it (an edit distance under 3, case ignored), else "".
// A candidate equal to name is no suggestion.
func Closest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == name {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
