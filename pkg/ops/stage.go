package ops

// Encodings of an upload.
const (
	// EncodingZstd is a zstd stream of the whole file.
	EncodingZstd = "zstd"
	// EncodingPatch is a patch (pkg/delta) against the file at Reference.
	EncodingPatch = "patch"
)

// StageDecodeItem is one encoded upload the swap op decodes into its
// staged file (SwapItem.Encoded and the fields beside it).
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
	// Size is the length the decoded file must have: decoding stops, and
	// fails, as soon as it would write more.
	Size int64 `json:"size"`
}
