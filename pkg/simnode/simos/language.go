package simos

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/swdt/pkg/winos"
)

// PowerShell's Constrained Language mode. Under a WDAC or AppLocker
// policy powershell.exe runs scripts in ConstrainedLanguage: only the
// allowed (core) types of about_Language_Modes may be used, New-Object
// creates only those, and Add-Type cannot define types. simnode applies
// the rule to the text of each fixed script it is asked to run
// (--language-mode constrained, State.LanguageMode): a script that names
// another type stops with PowerShell's error, whatever the script is.
//
// The model reads the types a script names (type literals, New-Object,
// Add-Type), which is where a script meets the rule in practice; it does
// not follow the type of a value a cmdlet returned. It is stricter than
// PowerShell in one way: a type literal of another type counts even when
// only its static property is read.

// LanguageConstrained is State.LanguageMode on a node under an
// application control policy.
const LanguageConstrained = "ConstrainedLanguage"

// ParseLanguageMode checks a --language-mode value: full or constrained.
func ParseLanguageMode(s string) (string, error) {
	switch s {
	case "full":
		return "FullLanguage", nil
	case "constrained":
		return LanguageConstrained, nil
	}
	return "", fmt.Errorf("unknown language mode %q: want full or constrained", s)
}

// constrainedTypes are the types about_Language_Modes allows in
// ConstrainedLanguage, by accelerator and by full name (lower case).
var constrainedTypes = func() map[string]bool {
	allowed := map[string]bool{}
	for _, t := range strings.Fields(`adsi adsisearcher alias allowemptycollection allowemptystring allownull
		argumentcompleter argumentcompletions array bigint bool byte char cimclass cimconverter ciminstance
		cimsession cimtype cmdletbinding cultureinfo datetime decimal double dsclocalconfigurationmanager
		dscproperty dscresource experimentaction experimental experimentalfeature float guid hashtable int int16
		int32 int64 ipaddress ipendpoint long mailaddress microsoft.powershell.commands.modulespecification
		norunspaceaffinity nullstring object[] objectsecurity ordered outputtype parameter physicaladdress
		pscredential pscustomobject psdefaultvalue pslistmodifier psobject psprimitivedictionary
		pstypenameattribute ref regex sbyte securestring semver short single string supportswildcards switch
		timespan uint uint16 uint32 uint64 ulong uri ushort validatecount validatedrive validatelength
		validatenotnull validatenotnullorempty validatenotnullorwhitespace validatepattern validaterange
		validatescript validateset validatetrusteddata validateuserdrive version void wildcardpattern wmi
		wmiclass wmisearcher x500distinguishedname x509certificate xml object
		system.array system.boolean system.byte system.char system.datetime system.decimal system.double
		system.guid system.int16 system.int32 system.int64 system.object[] system.sbyte system.single
		system.string system.timespan system.uint16 system.uint32 system.uint64 system.uri system.version
		system.void system.collections.hashtable system.globalization.cultureinfo
		system.text.regularexpressions.regex system.management.automation.psobject
		system.management.automation.pscustomobject system.management.automation.switchparameter
		system.xml.xmldocument system.net.ipaddress`) {
		allowed[t] = true
	}
	return allowed
}()

var (
	// typeLiteral is [Name] or [Name[]] not preceded by what makes it an
	// index ($var[...], ...)[...], ...][...]).
	typeLiteral = regexp.MustCompile(`(^|[^\w$\])])\[([A-Za-z_][\w.]*(?:\[\])?)\]`)
	// newObject is New-Object's type argument.
	newObject = regexp.MustCompile(`(?i)\bNew-Object\s+(?:-TypeName\s+)?([A-Za-z_][\w.]*)`)
	// addType is any use of Add-Type.
	addType = regexp.MustCompile(`(?i)\bAdd-Type\b`)
)

// constrainedRefusal is the error PowerShell stops a script with under
// ConstrainedLanguage, and whether it does: the first line of source
// (comments and string literals aside) that names a type outside the
// allowed list, creates one or defines one.
func constrainedRefusal(source string) (string, bool) {
	for i, line := range strings.Split(scriptCode(source), "\n") {
		var msg string
		switch {
		case addType.MatchString(line):
			msg = "Cannot add type. Definition of new types is not supported in this language mode."
		case newObject.MatchString(line) && !allowedType(newObject.FindStringSubmatch(line)[1]):
			msg = "Cannot create type. Only core types are supported in this language mode."
		default:
			for _, m := range typeLiteral.FindAllStringSubmatch(line, -1) {
				if !allowedType(m[2]) {
					msg = "Cannot invoke method. Method invocation is supported only on core types in this language mode."
					break
				}
			}
		}
		if msg != "" {
			return fmt.Sprintf("%s\r\nAt line:%d char:1\r\n+ %s\r\n    + CategoryInfo          : InvalidOperation: (:) [], RuntimeException\r\n",
				msg, i+1, strings.TrimSpace(strings.Split(source, "\n")[i])), true
		}
	}
	return "", false
}

// allowedType reports whether ConstrainedLanguage allows a type, named
// as a script may name it (System. may be left out; an array of an
// allowed type is allowed).
func allowedType(name string) bool {
	l := strings.ToLower(name)
	if constrainedTypes[l] || constrainedTypes["system."+l] {
		return true
	}
	elem, isArray := strings.CutSuffix(l, "[]")
	return isArray && allowedType(elem)
}

// scriptCode is source with comments and the text of string literals
// blanked out (line breaks kept), so that only code is matched.
func scriptCode(source string) string {
	out := []byte(source)
	blank := func(i int) {
		if out[i] != '\n' {
			out[i] = ' '
		}
	}
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '#':
			for ; i < len(out) && out[i] != '\n'; i++ {
				blank(i)
			}
		case c == '<' && i+1 < len(out) && out[i+1] == '#':
			for ; i < len(out) && !(out[i] == '>' && i > 0 && source[i-1] == '#'); i++ {
				blank(i)
			}
			if i < len(out) {
				blank(i)
			}
		case c == '\'' || c == '"':
			for i++; i < len(out); i++ {
				if c == '"' && out[i] == '`' && i+1 < len(out) {
					blank(i)
					i++
					blank(i)
					continue
				}
				if out[i] == c {
					if i+1 < len(out) && out[i+1] == c { // '' or "" inside the literal
						blank(i)
						i++
						blank(i)
						continue
					}
					break
				}
				blank(i)
			}
		}
	}
	return string(out)
}

// constrainedScript is what powershell.exe does with script s when the
// node's language mode refuses it.
func (n *Node) constrainedScript(s winos.Script) (winos.Result, bool) {
	if n.LanguageMode() != LanguageConstrained {
		return winos.Result{}, false
	}
	msg, refused := constrainedRefusal(s.Source())
	if !refused {
		return winos.Result{}, false
	}
	return winos.Result{ExitCode: 1, Stderr: []byte(msg)}, true
}

// constrainedErr is the error the Windows layer's script-backed methods
// (the firewall's, the event log's) return when the language mode refuses their script.
func (n *Node) constrainedErr(s winos.Script) error {
	res, refused := n.constrainedScript(s)
	if !refused {
		return nil
	}
	return fmt.Errorf("script %s exited with code %d: %s", s.Name(), res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}
