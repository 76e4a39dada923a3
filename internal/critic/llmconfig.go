package critic

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"
)

// PromptVersion identifies the prompt the LLM critic sends. It is bumped
// whenever the prompt changes, so that critiques can be told apart.
const PromptVersion = "v3"

// Defaults of the LLM critic's options.
const (
	// DefaultDiffBudget is how many bytes of numbered diff are sent to the
	// model: about 50,000 tokens, which leaves room for the answer in every
	// current model's context window.
	DefaultDiffBudget = 192 << 10
	// DefaultLLMMaxFindings caps the findings asked for and kept: a
	// handful, because reviewers dismiss bots that comment on everything.
	DefaultLLMMaxFindings = 5
	// MaxInstructionsLen bounds the deployment's and each repository's
	// extra instructions (runes).
	MaxInstructionsLen = 2000

	// tokensPerFinding and replyOverhead size the output limit to the cap:
	// a finding with its scenario is about 120 tokens, the summary and the
	// JSON around them about 300.
	tokensPerFinding = 200
	replyOverhead    = 400

	minDiffBudget   = 1 << 10
	maxMessageLen   = 600 // runes
	maxSummaryLen   = 800 // runes
	maxReplyBytes   = 1 << 20
	maxTitleLen     = 300  // runes
	maxDescription  = 4000 // runes
	defaultLLMRule  = "llm-review"
	boundaryEntropy = 16 // bytes
)

// ErrMalformedReply is wrapped by the LLM critic's Review when the model's
// answer is not the JSON object the prompt asks for (and was not cut at the
// output limit). Classified SCHEMA_INVALID but transient: a model rarely
// repeats the same slip, and if it does, the budget ends in a dead letter.
var ErrMalformedReply = errors.New("critic: malformed model reply")

// llmConfig holds the LLM critic's tunables, copied at construction.
type llmConfig struct {
	diffBudget      int
	maxOutputTokens int // 0: sized to maxFindings
	maxFindings     int
	temperature     *float32
	instructions    string
	byRepository    map[string]string
	// boundary draws the per-request delimiter; tests fix it.
	boundary func() string
}

func defaultLLMConfig() llmConfig {
	return llmConfig{diffBudget: DefaultDiffBudget, maxFindings: DefaultLLMMaxFindings, boundary: randomBoundary}
}

// outputTokens is the answer's limit: as set, or sized to the cap.
func (c llmConfig) outputTokens() int {
	if c.maxOutputTokens > 0 {
		return c.maxOutputTokens
	}
	return replyOverhead + tokensPerFinding*c.maxFindings
}

// LLMOption configures NewLLM.
type LLMOption func(*llmConfig)

// WithDiffBudget sets how many bytes of numbered diff are sent (default
// DefaultDiffBudget). Values below 1 KiB are raised to 1 KiB.
func WithDiffBudget(n int) LLMOption {
	return func(c *llmConfig) { c.diffBudget = max(n, minDiffBudget) }
}

// WithMaxOutputTokens bounds the model's answer (default: sized to the
// findings cap). Values below 1 are ignored.
func WithMaxOutputTokens(n int) LLMOption {
	return func(c *llmConfig) {
		if n > 0 {
			c.maxOutputTokens = n
		}
	}
}

// WithLLMMaxFindings caps the findings asked for and kept (default
// DefaultLLMMaxFindings); the most severe are kept. Values below 1 are
// ignored.
func WithLLMMaxFindings(n int) LLMOption {
	return func(c *llmConfig) {
		if n > 0 {
			c.maxFindings = n
		}
	}
}

// WithTemperature sets the sampling temperature. Unset, each adapter sends
// its model family's choice (Bedrock 0, OpenAI nothing: some OpenAI models
// accept only their default).
func WithTemperature(t float32) LLMOption {
	return func(c *llmConfig) { c.temperature = &t }
}

// WithInstructions adds a deployment's review instructions, and per
// repository more: byRepository maps a changelist id prefix ("acme/store"
// matches "acme/store#42") to instructions. Each is cut to
// MaxInstructionsLen runes. They are the operator's words, sent as
// instructions, outside the untrusted data.
func WithInstructions(deployment string, byRepository map[string]string) LLMOption {
	return func(c *llmConfig) {
		c.instructions = limitRunes(strings.TrimSpace(deployment), MaxInstructionsLen)
		c.byRepository = make(map[string]string, len(byRepository))
		for k, v := range byRepository {
			if k = strings.TrimSpace(k); k != "" && strings.TrimSpace(v) != "" {
				c.byRepository[k] = limitRunes(strings.TrimSpace(v), MaxInstructionsLen)
			}
		}
	}
}

// withBoundary fixes the delimiter (tests, golden prompts).
func withBoundary(b string) LLMOption {
	return func(c *llmConfig) { c.boundary = func() string { return b } }
}

func newLLMConfig(opts []LLMOption) llmConfig {
	cfg := defaultLLMConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// repositoryInstructions are the instructions for the repository whose
// changelist id starts with a configured key followed by a separator.
func (c llmConfig) repositoryInstructions(changelistID string) string {
	best := ""
	for k := range c.byRepository {
		if strings.HasPrefix(changelistID, k) && len(k) > len(best) {
			if rest := changelistID[len(k):]; rest == "" || strings.ContainsAny(rest[:1], "#!~:/") {
				best = k
			}
		}
	}
	if best == "" {
		return ""
	}
	return c.byRepository[best]
}

// randomBoundary is 128 random bits: a diff's author cannot know it, so a
// diff cannot close the data early (R-CRITIC-2).
func randomBoundary() string {
	b := make([]byte, boundaryEntropy)
	if _, err := rand.Read(b); err != nil {
		panic("critic: crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

func limitRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
