package ops

// StageDecode turns encoded uploads (compressed, or a patch against the
// destination) into staged files and verifies each one's SHA-256 on the
// node.
var StageDecode = register[StageDecodeRequest, StageDecodeResponse]("stage-decode")

// Encodings of an upload.
const (
	// EncodingZstd is a zstd stream of the whole file.
	EncodingZstd = "zstd"
	// EncodingPatch is a patch (pkg/delta) against the file at Reference.
	EncodingPatch = "patch"
)

// StageDecodeItem is one encoded upload to decode.
type StageDecodeItem struct {
	// Encoded is the uploaded file (Staged + ".swdt-zst"). It is removed
	// whatever the outcome.
	Encoded string `json:"encoded"`
	// Encoding is EncodingZstd or EncodingPatch.
	Encoding string `json:"encoding"`
	// Reference is the file a patch was made against (the destination).
	Reference string `json:"reference,omitempty"`
	// Staged is where the decoded file goes (Destination + ".swdt-new-"
	// + the run's ID); it is removed unless its SHA-256 is SHA256.
	Staged string `json:"staged"`
	// SHA256 is the lower-case hex digest the decoded file must have.
	SHA256 string `json:"sha256"`
}

// StageDecodeRequest lists encoded uploads.
type StageDecodeRequest struct {
	// RunID is the caller's: it must hold the node's swap lock (empty
	// for a caller outside a locked run: then no other run may hold a
	// valid lock).
	RunID string            `json:"runId,omitempty"`
	Items []StageDecodeItem `json:"items"`
}

// StageDecodeResult is the outcome for one item.
type StageDecodeResult struct {
	// OK is true when Staged holds the file with the expected digest.
	OK bool `json:"ok"`
	// File describes the staged file when OK.
	File FileInfo `json:"file"`
	// Error says why not (a damaged stream, another reference, a digest
	// that differs).
	Error string `json:"error,omitempty"`
}

// StageDecodeResponse has one result per item, in order.
type StageDecodeResponse struct {
	Results []StageDecodeResult `json:"results"`
}
