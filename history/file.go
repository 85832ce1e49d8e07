package history

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
)

// HistoryFile is the name of the histories in a live run's folder.
const HistoryFile = "history.json.gz"

// EncodeHistories returns the histories of a run, keyed by design, as
// gzip-compressed JSON: what Judge read, so that anyone can judge it again.
func EncodeHistories(h map[string]*History) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(h); err != nil {
		return nil, fmt.Errorf("history: encoding histories: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("history: encoding histories: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadHistories reads what EncodeHistories wrote.
func ReadHistories(r io.Reader) (map[string]*History, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("history: reading histories: %w", err)
	}
	defer zr.Close()
	var h map[string]*History
	if err := json.NewDecoder(zr).Decode(&h); err != nil {
		return nil, fmt.Errorf("history: reading histories: %w", err)
	}
	return h, nil
}
