// Package instructions reads the model review's instructions: the
// deployment's own, and more per repository. A deployment keeps them in an
// object of its payload bucket (config.ReviewInstructionsKey), not in the llm function's
// environment: 2,000 characters of instructions with quotes, newlines or
// text outside ASCII take up to 12,000 bytes there, three times what
// Lambda allows a function's whole environment (R-LIMIT-1). The llm
// function reads the object through a Source, which keeps it for a few
// minutes, so an operator's change reaches the next reviews without a
// deploy.
package instructions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/criticizer/criticizer/internal/config"
)

// MaxBytes bounds the object: far more than a deployment's and many
// repositories' instructions take, and never a Lambda's memory.
const MaxBytes = 256 << 10

// Set is a deployment's instructions: its own (Deployment) and, per
// changelist id prefix ("acme/store" for "acme/store#42"), a
// repository's (ByRepository). Each is at most
// config.MaxReviewInstructionsRunes characters.
type Set struct {
	Deployment   string            `yaml:"instructions"`
	ByRepository map[string]string `yaml:"by_repository"`
}

// Equal reports whether s and o hold the same instructions.
func (s Set) Equal(o Set) bool {
	if s.Deployment != o.Deployment || len(s.ByRepository) != len(o.ByRepository) {
		return false
	}
	for k, v := range s.ByRepository {
		if w, ok := o.ByRepository[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FromConfig is the instructions config read from the environment
// (CRITICIZER_REVIEW_INSTRUCTIONS, CRITICIZER_REVIEW_INSTRUCTIONS_BY_REPO):
// what a local run or the evaluation uses, and what a deployment without
// the object reviews with.
func FromConfig(c config.Config) Set {
	return Set{Deployment: c.LLM.ReviewInstructions, ByRepository: c.LLM.ReviewInstructionsByRepo}
}

// ErrInvalid is wrapped by Parse's errors.
var ErrInvalid = errors.New("instructions: invalid")

// Parse reads the object: YAML with the keys instructions and
// by_repository, nothing else; each instruction at most
// config.MaxReviewInstructionsRunes characters. The error names the key,
// never the text.
//
//	instructions: |
//	  Amounts are int64 cents; a float is a bug.
//	by_repository:
//	  acme/store: Every handler checks the tenant.
func Parse(b []byte) (Set, error) {
	var s Set
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return Set{}, fmt.Errorf("%w: %s: %v", ErrInvalid, config.ReviewInstructionsKey, err)
	}
	s.Deployment = strings.TrimSpace(s.Deployment)
	if n := utf8.RuneCountInString(s.Deployment); n > config.MaxReviewInstructionsRunes {
		return Set{}, fmt.Errorf("%w: %s: instructions: %d characters, at most %d", ErrInvalid, config.ReviewInstructionsKey, n, config.MaxReviewInstructionsRunes)
	}
	for k, v := range s.ByRepository {
		if strings.TrimSpace(k) == "" {
			return Set{}, fmt.Errorf("%w: %s: by_repository: an empty repository", ErrInvalid, config.ReviewInstructionsKey)
		}
		if n := utf8.RuneCountInString(strings.TrimSpace(v)); n > config.MaxReviewInstructionsRunes {
			return Set{}, fmt.Errorf("%w: %s: by_repository %q: %d characters, at most %d", ErrInvalid, config.ReviewInstructionsKey, k, n, config.MaxReviewInstructionsRunes)
		}
	}
	return s, nil
}
