package shard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Write is a stand-in until the set code lands.
func Write(out string, meta *Meta, files map[string][]byte) (string, error) {
	dir := filepath.Join(out, Name(meta.Index, meta.Count))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o644); err != nil {
			return "", err
		}
	}
	b, _ := json.MarshalIndent(meta, "", "  ")
	os.WriteFile(filepath.Join(dir, MetaFile), b, 0o644)
	return dir, os.WriteFile(filepath.Join(dir, DoneFile), []byte(meta.Finished.Format(time.RFC3339Nano)), 0o644)
}
