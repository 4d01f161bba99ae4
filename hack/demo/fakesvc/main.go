// Command fakesvc is the stand-in Windows service binary of `make demo`.
// The demo cross-builds it with GOOS=windows once per service, setting name
// and version with -ldflags -X, so each file is a real PE executable with its
// own SHA-256. The simulated node never runs it; on Windows it prints its
// name and version and exits.
package main

// name and version are set with -ldflags "-X main.name=... -X main.version=...".
var (
	name    = "fakesvc"
	version = "dev"
)

func main() {
	// println keeps the binary free of imports, so the cross-build is quick.
	println(name, version)
}
