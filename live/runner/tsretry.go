package runner

import (
	"bufio"
	"bytes"
	"errors"
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

// retryClamped is an SSE body as the go-sdk clients read it, with every
// retry field clamped as copyClampingRetry clamps the ts-sdk clients':
// the SDK reads the hint itself, and its ms-to-Duration product wraps
// around, so an overflowing hint passed on made it resume at once, up to
// its 5 retries. A line longer than the buffer is passed on as it comes.
type retryClamped struct {
	io.Closer
	g       *guard
	br      *bufio.Reader
	out     []byte // what the last line left to read
	err     error
	atStart bool
}

func (g *guard) clampingRetry(body io.ReadCloser) io.ReadCloser {
	return &retryClamped{Closer: body, g: g, br: bufio.NewReaderSize(body, 32<<10), atStart: true}
}

func (r *retryClamped) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, err := r.br.ReadSlice('\n')
		if r.atStart && err == nil && bytes.HasPrefix(line, []byte("retry:")) {
			line = r.g.clampRetryLine(line)
		}
		r.atStart = err == nil
		if err != nil && err != bufio.ErrBufferFull {
			r.err = err
		}
		r.out = line
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
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

// sseChecks is what checkSSE calls back: limit when the stream went over
// limits.line_bytes or limits.event_bytes (k, as streamLimit names it),
// event for each event it read, which says false once the call is over
// limits.events_per_call.
type sseChecks struct {
	limit func(k int)
	event func() bool
}

// errOverLimit ends a stream the recording proxy passes on once one of the
// scenario's limits was exceeded; the call's cause names the limit.
var errOverLimit = errors.New("a limit of the scenario was exceeded")

// checkSSE is body as the ts-sdk clients' recording proxy passes it on to
// Node, read at the same time by the native clients' SSE reader within
// the same limits (sseLimits, but for the id's: the SDK keeps only the last
// id, as go-sdk's does). Once that reader fails on a limit, or the call is
// past limits.events_per_call, reading the body fails, which ends the
// stream to Node: Node gets at most one read past the limit. Close ends
// the reader.
func (g *guard) checkSSE(body io.Reader, on sseChecks) io.ReadCloser {
	pr, pw := io.Pipe()
	lim := g.sseLimits()
	lim.ID = 0
	go func() {
		rd := sse.NewReaderLimits(pr, lim)
		for {
			_, err := rd.Next()
			if k := streamLimit(err); k >= 0 {
				on.limit(k)
				err = errOverLimit
			} else if err == nil && !on.event() {
				err = errOverLimit
			}
			if err != nil {
				pr.CloseWithError(err) // the next Write, and so the next Read, fails with it
				return
			}
		}
	}()
	return &checkedBody{r: body, pw: pw}
}

// checkedBody hands what it reads to checkSSE's reader before its caller
// sees it.
type checkedBody struct {
	r  io.Reader
	pw *io.PipeWriter
}

func (b *checkedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		if _, werr := b.pw.Write(p[:n]); werr != nil {
			return 0, werr
		}
	}
	if err != nil {
		b.pw.CloseWithError(err)
	}
	return n, err
}

func (b *checkedBody) Close() error { return b.pw.Close() }
