package critic

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
)

// Model is a language model behind an API: one request, one reply. The
// adapters live in their own packages (critic/bedrock, critic/openai) so
// that only the function that calls a model links its SDK; the review
// itself (what is sent, what is kept of the answer) is LLM's, the same for
// every model.
type Model interface {
	// Name identifies the model in Critique.Critic, e.g. "bedrock/<id>".
	Name() string
	// Complete sends one request. Errors are classified for the stage
	// runner (package retry); they never quote the prompt or the reply.
	Complete(ctx context.Context, req Request) (Reply, error)
}

// Request is one prompt.
type Request struct {
	System, User string
	// MaxOutputTokens bounds the answer.
	MaxOutputTokens int
	// Temperature is nil for the model's default.
	Temperature *float32
	// StableSystem is how many leading bytes of System are the same in
	// every request of this deployment (no per-request boundary, no
	// repository's instructions): an adapter whose model caches prompt
	// prefixes may mark the end of that part as a cache point.
	StableSystem int
}

// Reply is a model's answer.
type Reply struct {
	Text string
	// Cut reports that the model stopped at MaxOutputTokens (OpenAI's
	// finish_reason "length", Bedrock's stopReason "max_tokens"): the text
	// is the beginning of an answer, not a malformed one.
	Cut bool
	// Tokens the call was billed for, when the API says (0 otherwise).
	InputTokens, OutputTokens int
	// CacheReadTokens and CacheWriteTokens are the input tokens read from
	// and written to the model's prompt cache, when the API says. Bedrock
	// counts them apart from InputTokens; OpenAI's cached tokens are part
	// of its prompt tokens.
	CacheReadTokens, CacheWriteTokens int
}

// Usage is what a review cost in model tokens, as the API reported them
// (Reply).
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// LLM is a Critic that asks a Model. What it sends and keeps (R-CRITIC-1
// to R-CRITIC-5):
//   - the parsed diff, each hunk with the new file's line numbers, removed
//     lines apart, inside a boundary drawn at random for each request, so a
//     diff cannot fake its end (the prompt says anything inside is data);
//   - the files worth the budget: lock, generated, vendored and binary
//     files left out and named, deleted files by name only, source before
//     tests before the rest, a file that does not fit skipped while smaller
//     ones still go; no model call when nothing reviewable is left;
//   - with what the hunks leave of the budget, the code around each hunk
//     as the head has it (Input.Head): its enclosing function or ten lines
//     on each side, numbered as context that may not be cited
//     (R-CONTEXT-1, R-CONTEXT-2);
//   - of the answer, findings on an added or context line of a file that
//     was sent (a line shown only as code around the hunks, dropped;
//     another line of such a file becomes its line 0; a file not sent,
//     dropped), errors and warnings only, at most the cap;
//   - an answer cut at the output limit keeps its complete findings and
//     says so, instead of being retried as malformed;
//   - the offline critic's high-confidence findings (credentials, merge
//     conflict markers) are merged in.
//
// An LLM is immutable after NewLLM and safe for concurrent use.
type LLM struct {
	model Model
	cfg   llmConfig
}

var _ Critic = (*LLM)(nil)

// NewLLM returns a critic that asks m.
func NewLLM(m Model, opts ...LLMOption) (*LLM, error) {
	if m == nil {
		return nil, errors.New("critic: a model is required")
	}
	return &LLM{model: m, cfg: newLLMConfig(opts)}, nil
}

// Name is the model's name.
func (l *LLM) Name() string { return l.model.Name() }

// Fingerprint implements Fingerprinter: the model's name, the prompt (its
// version and its rules), the findings cap and the instructions that apply
// to in's changelist, the deployment's and its repository's, and what the
// repository's settings file asks (R-REPO-1).
func (l *LLM) Fingerprint(in Input) string {
	parts := []string{l.model.Name(), PromptVersion, systemPrompt, strconv.Itoa(l.cfg.maxFindings),
		l.cfg.instructions, l.cfg.repositoryInstructions(in.ChangelistID), generatedFingerprint(in.Generated)}
	if s := settingsFingerprint(in.Settings, true); s != "" {
		parts = append(parts, s)
	}
	return fingerprint(parts...)
}

// Review implements Critic.
func (l *LLM) Review(ctx context.Context, in Input) (Critique, error) {
	return reviewWithLLM(ctx, l.model, l.cfg, in)
}

// fingerprint is a short, unambiguous hash of parts (each length-prefixed):
// 128 bits, unpadded base64url.
func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p)) + ":" + p))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}
