//go:build !unix

package delta

// mapsFiles says that saved indexes are read here, not mapped.
const mapsFiles = false
