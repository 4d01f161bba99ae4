package simos

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/winos"
)

// The Constrained Language model refuses what about_Language_Modes
// forbids (types outside its list, New-Object of them, Add-Type) and
// lets the rest run, whatever a comment or a string says.
func TestConstrainedRefusal(t *testing.T) {
	tests := []struct {
		name, source string
		refused      string // part of the error; "" when the line runs
	}{
		{"stdin as a stream", "$in = [Console]::OpenStandardInput()", "Method invocation is supported only on core types"},
		{"a stream reader", "$r = New-Object System.IO.StreamReader($x)", "Only core types are supported"},
		{"a stream reader, short", "$r = New-Object -TypeName IO.StreamReader -ArgumentList $x", "Only core types are supported"},
		{"an encoding", "$e = New-Object System.Text.UTF8Encoding($false)", "Only core types are supported"},
		{"setting the output encoding", "[Console]::OutputEncoding = $e", "core types"},
		{"an IO type", "[System.IO.File]::ReadAllText($p)", "core types"},
		{"an enum of another type", "$m.IndexOf($n, [System.StringComparison]::OrdinalIgnoreCase)", "core types"},
		{"the machine name", "[Environment]::MachineName", "core types"},
		{"Add-Type", "Add-Type -TypeDefinition $code", "Definition of new types is not supported"},
		{"an exception", "$e = New-Object System.Exception $m", "Only core types are supported"},
		{"core casts", "$a = [string]$x + [int]$y + [char]13; $h = [ordered]@{ a = [bool]$z }", ""},
		{"core statics", "[datetime]::Parse($s, [System.Globalization.CultureInfo]::InvariantCulture)", ""},
		{"parameter attributes", "param([Parameter(Mandatory = $true)] [AllowNull()] [AllowEmptyCollection()] $Object, [int] $Depth = 20)", ""},
		{"indexing", "$found[0]; $e.Data['x']; $list[$i]; (Get-Item x)[1]", ""},
		{"a core array", "[object[]]$a; [string[]]$b", ""},
		{"$input", "$request = (@($input) -join \"`n\") | ConvertFrom-Json", ""},
		{"a comment", "# [Console]::OpenStandardInput() was used here\n$a = 1", ""},
		{"a block comment", "<# New-Object IO.StreamReader #>\n$a = 1", ""},
		{"a string", "Write-Output '[Console]::OutputEncoding'; \"New-Object IO.StreamReader `\"x`\"\"", ""},
		{"a string with a quote", "'it''s [Console]::In'", ""},
		{"code after a string", "$a = 'x'; [Console]::Out.Flush()", "core types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, refused := constrainedRefusal(tt.source)
			if refused != (tt.refused != "") || !strings.Contains(msg, tt.refused) {
				t.Errorf("constrainedRefusal(%q) = %q, %v; want refused: %q", tt.source, msg, refused, tt.refused)
			}
		})
	}
}

// Every fixed script runs under the Constrained Language model exactly
// when its header says it may ("# language: constrained"): a script that
// claims it and uses a type outside the allowed list fails here, as it
// would on a node under WDAC or AppLocker.
func TestFixedScriptsUnderConstrainedLanguage(t *testing.T) {
	for _, s := range winos.Scripts() {
		t.Run(s.Name(), func(t *testing.T) {
			claim := strings.Contains(s.Source(), "# script: "+s.Name()+"\n# language: constrained\n")
			msg, refused := constrainedRefusal(s.Source())
			if claim && refused {
				t.Errorf("claims Constrained Language mode but would stop with: %s", msg)
			}
			if !claim && !refused {
				t.Errorf("claims FullLanguage but runs in Constrained Language mode: say '# language: constrained'")
			}
		})
	}
}
