package remote

import (
	"encoding/pem"
	"strconv"
)

func pemEncode(typ string, b []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})
}

func itoa(i int) string { return strconv.Itoa(i) }
