package config

import (
	"fmt"
	"strconv"
	"strings"
)

// EnvContextFileBytes caps the size of a changed file the fetch stage
// reads at the version's head for the code around its hunks
// (R-CONTEXT-1, R-CONTEXT-2): a larger file gets no context. 0 reads
// none: every review is of the hunks alone.
const EnvContextFileBytes = "CRITICIZER_CONTEXT_FILE_BYTES"

// DefaultContextFileBytes is EnvContextFileBytes's default: 128 KiB,
// some 3,000 lines of code.
const DefaultContextFileBytes = 128 << 10

// maxContextFileBytes bounds the setting: the fetch stage holds every
// file it reads (at most pipeline.MaxContextFiles) in memory and one S3
// object.
const maxContextFileBytes = 1 << 20

// readContextFileBytes reads EnvContextFileBytes: a whole number of bytes
// from 0 (off) to maxContextFileBytes.
func (c *Config) readContextFileBytes(getenv func(string) string) error {
	c.ContextFileBytes = DefaultContextFileBytes
	v := strings.TrimSpace(getenv(EnvContextFileBytes))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxContextFileBytes {
		return fmt.Errorf("%s: want a whole number of bytes from 0 (off) to %d", EnvContextFileBytes, maxContextFileBytes)
	}
	c.ContextFileBytes = n
	return nil
}
