package deadletter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrMalformed: the bytes are not valid JSON, or are an envelope whose
	// fields have the wrong types.
	ErrMalformed = errors.New("deadletter: malformed envelope")
	// ErrUnsupportedVersion: the envelope has a schema_version this build
	// does not know. It is refused rather than half-read; the item stays in
	// the queue for a newer build.
	ErrUnsupportedVersion = errors.New("deadletter: unsupported schema version")
	// ErrRedriven is the failure recorded when a raw stage message reaches a
	// dead-letter queue through the SQS redrive policy, i.e. without an
	// envelope because the worker crashed or timed out on every receive.
	// Wrap such a message with New(Failure{Err: ErrRedriven, ...}).
	ErrRedriven = errors.New("deadletter: moved by the queue's redrive policy without an envelope (worker crashed or timed out)")
)

// Decode reads a dead-letter queue message. It returns ok=false (and no
// error) when the bytes are valid JSON but not an envelope: a raw stage
// message moved by the redrive policy, which has no schema_version. The
// caller wraps those with New and ErrRedriven. Invalid JSON yields an error
// wrapping ErrMalformed; an envelope of another version, one wrapping
// ErrUnsupportedVersion.
func Decode(b []byte) (Envelope, bool, error) {
	if !json.Valid(b) {
		return Envelope{}, false, fmt.Errorf("%w: not valid JSON", ErrMalformed)
	}
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Envelope{}, false, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return Envelope{}, false, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	raw, ok := probe["schema_version"]
	if !ok {
		return Envelope{}, false, nil
	}
	var version int
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Envelope{}, false, fmt.Errorf("%w: schema_version is null", ErrMalformed)
	}
	if err := json.Unmarshal(raw, &version); err != nil {
		return Envelope{}, false, fmt.Errorf("%w: schema_version: %w", ErrMalformed, err)
	}
	if version != SchemaVersion {
		return Envelope{}, false, fmt.Errorf("%w: %d (this build reads %d)", ErrUnsupportedVersion, version, SchemaVersion)
	}
	var e Envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return Envelope{}, false, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return e, true, nil
}
