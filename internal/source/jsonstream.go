package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonBodyBound is how much of a JSON answer holding a diff (GitHub's
// comparison, GitLab's merge request version) is read at most: JSON
// escapes a diff's text (GitLab writes <, > and & as six bytes each), and
// the answer lists commits beside the files. A longer answer is cut there,
// and the diff is Truncated.
func jsonBodyBound(limit int) int64 { return 8*int64(limit) + 8<<20 }

// eachElement decodes a JSON object as a stream: it skips every member
// but field, and calls each for every element of the array field holds
// (each decodes the element from dec). It stops when each returns false,
// or when bound bytes have been read, and reports then that it stopped
// before the array's end (cut). Streaming, rather than decoding the whole
// answer into memory, is why this is hand-written: an answer is as large
// as the change, and only as much of it is read as the diff's limit needs.
func eachElement(r io.Reader, field string, bound int64, each func(dec *json.Decoder) (bool, error)) (cut bool, err error) {
	br := &boundedReader{r: r, left: bound}
	dec := json.NewDecoder(br)
	fail := func(err error) (bool, error) {
		if br.hit {
			return true, nil // the bound, not a garbled answer
		}
		return false, err
	}
	if err := expectDelim(dec, '{'); err != nil {
		return fail(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		if key, _ := tok.(string); key != field {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fail(err)
			}
			continue
		}
		tok, err = dec.Token()
		if err != nil {
			return fail(err)
		}
		if tok == nil {
			return false, nil // "field": null
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return false, fmt.Errorf("%s is not a list", field)
		}
		for dec.More() {
			more, err := each(dec)
			if err != nil {
				return fail(err)
			}
			if !more {
				return true, nil
			}
		}
		return false, nil
	}
	return false, nil
}

// memberString reads a JSON object as a stream up to the member field, a
// string, and returns it, skipping the members before it and reading
// nothing after it: GitHub's comparison puts its status before the
// commits and files that make it long.
func memberString(r io.Reader, field string) (string, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return "", err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key, _ := tok.(string); key == field {
			var v string
			if err := dec.Decode(&v); err != nil {
				return "", fmt.Errorf("%s: %w", field, err)
			}
			return v, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no %s", field)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return errors.New("not a JSON object")
	}
	return nil
}

// boundedReader reads at most left bytes of r, and remembers whether it
// stopped there.
type boundedReader struct {
	r    io.Reader
	left int64
	hit  bool
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
