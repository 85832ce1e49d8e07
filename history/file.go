package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// HistoryFile is the name of the histories in a live run's folder.
const HistoryFile = "history.json.gz"

// EncodeHistories returns the histories of a run, keyed by design, as
// gzip-compressed JSON: what Judge read, so that anyone can judge it again.
func EncodeHistories(h map[string]*History) ([]byte, error) {
	return EncodeHistoriesContext(context.Background(), h)
}

// EncodeHistoriesContext is EncodeHistories stopped when ctx ends: the
// compression of a large history takes seconds, and is done a chunk at a
// time.
func EncodeHistoriesContext(ctx context.Context, h map[string]*History) ([]byte, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("history: encoding histories: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for len(js) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("history: encoding histories stopped: %w", err)
		}
		n := min(len(js), 1<<20)
		if _, err := zw.Write(js[:n]); err != nil {
			return nil, fmt.Errorf("history: encoding histories: %w", err)
		}
		js = js[n:]
	}
	if _, err := zw.Write([]byte("\n")); err != nil { // as json.Encoder ends it
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
	for _, d := range h {
		if d != nil {
			d.internIDs()
		}
	}
	return h, nil
}
