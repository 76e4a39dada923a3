package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// OpenAI is an OpenAI-compatible chat completions server.
type OpenAI struct {
	BaseURL string
	Model   string
	APIKey  string
}

// ReviewInstructionsKey is the object of the payload bucket that holds a
// deployment's review instructions (internal/instructions reads it; the
// deployment lets llm read it). It is outside diffs/, which expires.
const ReviewInstructionsKey = "settings/review-instructions.yaml"

// readCritic reads the llm stage's settings: which critic, the model's,
// and the review's (findings cap, instructions, incremental reruns); and
// the notifier's MinSeverity, the floor of what the email shows.
func (c *Config) readCritic(getenv func(string) string) error {
	c.LLM.Critic = strings.ToLower(strings.TrimSpace(or(getenv(EnvCritic), CriticOffline)))
	c.LLM.BedrockModelID = strings.TrimSpace(getenv(EnvBedrockModelID))
	c.LLM.MaxFindings = DefaultLLMMaxFindings
	if v := strings.TrimSpace(getenv(EnvLLMMaxFindings)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 50 {
			return fmt.Errorf("%s: want a whole number from 1 to 50", EnvLLMMaxFindings)
		}
		c.LLM.MaxFindings = n
	}
	c.LLM.IncrementalReview = true
	if v := strings.TrimSpace(getenv(EnvIncrementalReview)); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s: want true or false", EnvIncrementalReview)
		}
		c.LLM.IncrementalReview = on
	}
	c.LLM.ReviewInstructions = strings.TrimSpace(getenv(EnvReviewInstructions))
	if utf8.RuneCountInString(c.LLM.ReviewInstructions) > MaxReviewInstructionsRunes {
		return fmt.Errorf("%s: at most %d characters", EnvReviewInstructions, MaxReviewInstructionsRunes)
	}
	if v := strings.TrimSpace(getenv(EnvReviewInstructionsByRepo)); v != "" {
		if err := json.Unmarshal([]byte(v), &c.LLM.ReviewInstructionsByRepo); err != nil {
			return fmt.Errorf("%s: want a JSON object of changelist id prefixes to instructions", EnvReviewInstructionsByRepo)
		}
		for k, ins := range c.LLM.ReviewInstructionsByRepo {
			if utf8.RuneCountInString(ins) > MaxReviewInstructionsRunes {
				return fmt.Errorf("%s: the instructions for %q are over %d characters", EnvReviewInstructionsByRepo, k, MaxReviewInstructionsRunes)
			}
		}
	}
	switch c.Notify.MinSeverity = strings.ToLower(strings.TrimSpace(getenv(EnvMinSeverity))); c.Notify.MinSeverity {
	case "", "info", "warning", "error":
	default:
		return fmt.Errorf("%s: want info, warning or error", EnvMinSeverity)
	}
	c.LLM.OpenAI = OpenAI{BaseURL: or(strings.TrimSpace(getenv(EnvOpenAIBaseURL)), DefaultOpenAIURL),
		Model: strings.TrimSpace(getenv(EnvOpenAIModel)), APIKey: getenv(EnvOpenAIAPIKey)}
	return nil
}
