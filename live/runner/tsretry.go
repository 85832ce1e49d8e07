package runner

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stormsim/stormsim/live/sse"
)

// copyClampingRetry copies an answer's body to Node, the ts-sdk clients'
// process, line by line, with every SSE retry field clamped to
// sse.MaxRetry and counted as the native clients count theirs. The SDK
// waits out a hint with Node's setTimeout, which takes a delay above
// 2^31-1 ms as 1 ms: a hint that large, passed on, made the clients
// resume at once. A line longer than the buffer is passed on as it comes.
// It flushes whenever nothing more is buffered, and returns the read error
// (nil at the end of the body) or the write error.
func (g *guard) copyClampingRetry(w http.ResponseWriter, body io.Reader) (readErr, writeErr error) {
	fl, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(body, 32<<10)
	atStart := true
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			out := line
			if atStart && err == nil && bytes.HasPrefix(line, []byte("retry:")) {
				out = g.clampRetryLine(line)
			}
			if _, werr := w.Write(out); werr != nil {
				return nil, werr
			}
			atStart = err == nil
			if fl != nil && br.Buffered() == 0 {
				fl.Flush()
			}
		}
		switch err {
		case nil, bufio.ErrBufferFull:
		case io.EOF:
			return nil, nil
		default:
			return err, nil
		}
	}
}

// clampRetryLine is an SSE "retry:" line with its value clamped to
// sse.MaxRetry, in ms; the line as it was when its value is not digits or
// within the bound.
func (g *guard) clampRetryLine(line []byte) []byte {
	v := strings.TrimSuffix(strings.TrimSuffix(string(line[len("retry:"):]), "\n"), "\r")
	d, clamped, ok := sse.ParseRetry(strings.TrimPrefix(v, " "), time.Millisecond)
	if !ok || !clamped {
		return line
	}
	g.hintsClamped.Add(1)
	return []byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n")
}
