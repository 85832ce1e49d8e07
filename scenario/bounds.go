package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Limits on a scenarios file, checked before the TOML decoder sees it. The
// decoder's cost grows much faster than the input on deep nesting (10,000
// nested inline tables in 60 KB took minutes and gigabytes), and no real
// scenario comes near either limit.
const (
	// MaxFileBytes is the largest scenarios file Load reads.
	MaxFileBytes = 4 << 20
	// MaxDepth is the deepest nesting accepted: inline tables and arrays
	// inside one another, or the parts of one dotted key or table header.
	MaxDepth = 64
)

// LoadContext is Load that gives up when ctx ends (Ctrl-C while a large
// file is being read): it returns ctx's error at once, and the decoding
// still under way is abandoned.
func LoadContext(ctx context.Context, path string, opts *Options) (*File, error) {
	type result struct {
		f   *File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Load(path, opts)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ReadFile reads the scenarios file path, refusing a file over
// MaxFileBytes without reading all of it.
func ReadFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than the %d MiB limit on a scenarios file", path, MaxFileBytes>>20)
	}
	return data, nil
}

// checkShape scans TOML text for nesting deeper than MaxDepth, without
// decoding it: inline tables and arrays opened in values, and the parts of
// a dotted key or table header. Strings and comments are skipped. It
// returns the line of the first excess, or 0 when the text is within the
// limits. It is a cheap over-approximation of the grammar, never a parser:
// text it lets through still goes to the decoder.
func checkShape(data []byte) (line int, what string) {
	line = 1
	var stack []byte // '{' and '[' opened in values
	keyCtx := true   // reading a key (line start, after '{', after ',' in an inline table)
	header := false  // inside a [table] or [[array]] header
	parts := 1       // parts of the current key or header
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
			if len(stack) == 0 {
				keyCtx, header, parts = true, false, 1
			}
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			n, nl := skipString(data[i:])
			i += n - 1
			line += nl
		case '[':
			switch {
			case header:
				// the second bracket of [[array]]
			case keyCtx && len(stack) == 0:
				header, parts = true, 1
			default:
				stack = append(stack, '[')
				keyCtx = false
				if len(stack) > MaxDepth {
					return line, "arrays and inline tables"
				}
			}
		case '{':
			stack = append(stack, '{')
			keyCtx, parts = true, 1
			if len(stack) > MaxDepth {
				return line, "arrays and inline tables"
			}
		case ']', '}':
			if header && c == ']' {
				header = false
				continue
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			keyCtx = false
		case ',':
			if len(stack) > 0 && stack[len(stack)-1] == '{' {
				keyCtx, parts = true, 1
			}
		case '=':
			if !header {
				keyCtx = false
			}
		case '.':
			if keyCtx || header {
				if parts++; parts > MaxDepth {
					return line, "parts of a dotted key or table header"
				}
			}
		}
	}
	return 0, ""
}

// skipString returns the length of the string that starts data (quotes
// included; to the end of data when it is not closed) and the newlines in it.
func skipString(data []byte) (n, newlines int) {
	q := data[0]
	multi := len(data) >= 3 && data[1] == q && data[2] == q
	i := 1
	if multi {
		i = 3
	}
	for ; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\\' && q == '"':
			if i+1 < len(data) && data[i+1] == '\n' {
				newlines++
			}
			i++
		case c == '\n':
			newlines++
			if !multi {
				return i, newlines - 1 // the newline ends the line, not the string
			}
		case c == q:
			if !multi {
				return i + 1, newlines
			}
			if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
				return i + 3, newlines
			}
		}
	}
	return len(data), newlines
}

// shapeErr names where text goes past the limits, or is nil.
func shapeErr(where string, data []byte) error {
	if len(data) > MaxFileBytes {
		return fmt.Errorf("%s: larger than the %d MiB limit on a scenarios file", where, MaxFileBytes>>20)
	}
	if line, what := checkShape(data); line > 0 {
		return fmt.Errorf("%s: line %d: nested more than %d levels deep (%s): refused before decoding", where, line, MaxDepth, what)
	}
	return nil
}
