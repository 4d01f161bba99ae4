# Turns a terminal capture (docs/demo.txt) into a Graphviz graph of one
# left-aligned monospace label, so `dot` renders it as a picture of the
# terminal. Used by `make images`.
BEGIN {
	printf "digraph terminal {\n  graph [bgcolor=\"#1e1e1e\", pad=0.25];\n"
	printf "  node [shape=plaintext, fontname=\"DejaVu Sans Mono\", fontsize=11, fontcolor=\"#e6e6e6\"];\n"
	printf "  t [label=\""
}
# escape puts a backslash before every c in s (split and join, because
# gsub's handling of backslashes differs between awks).
function escape(s, c,    parts, n, i, out) {
	n = split(s, parts, c)
	out = parts[1]
	for (i = 2; i <= n; i++)
		out = out "\\" c parts[i]
	return out
}
{ printf "%s\\l", escape(escape($0, "\\"), "\"") }
END { print "\"];\n}" }
