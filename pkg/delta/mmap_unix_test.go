//go:build unix

package delta

// mapsFiles says that saved indexes are mapped here.
const mapsFiles = true
