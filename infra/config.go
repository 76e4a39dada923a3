package main

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Context keys the app reads (`cdk deploy -c key=value`, or cdk.json's
// "context").
const (
	// CtxAssetDir is the directory holding <fn>/bootstrap for every function;
	// `make build` writes ../build relative to infra/.
	CtxAssetDir = "assetDir"
	// CtxMailFrom is the sender, "Name <address>" or a bare address, passed to
	// notify as CRITICIZER_MAIL_FROM.
	CtxMailFrom = "mailFrom"
	// CtxSESIdentity is the verified SES identity that mailFrom sends as: a
	// domain (default: mailFrom's domain) or the address itself.
	CtxSESIdentity = "sesIdentity"
	// CtxLogLevel is every function's LOG_LEVEL.
	CtxLogLevel = "logLevel"
	// CtxAlarmEmail, when set, subscribes an address to the alarm topic.
	CtxAlarmEmail = "alarmEmail"
	// CtxCritic picks the llm stage's critic: offline (default), bedrock or
	// openai. CtxCriticModel is the Bedrock model id or the OpenAI model;
	// CtxOpenAIBaseURL the OpenAI-compatible server. The OpenAI key goes in
	// the CriticSecret, never in context.
	CtxCritic        = "critic"
	CtxCriticModel   = "criticModel"
	CtxOpenAIBaseURL = "openaiBaseUrl"
	// CtxMaxSendRate is the SES account's maximum send rate (emails per
	// second; the account's "Sending quota" page), which every notifier
	// together keeps under; 0 turns the limiter off.
	CtxMaxSendRate = "maxSendRate"
	// CtxNotifyReserved reserves that many concurrent executions for
	// notify (0, the default: none). At least notify's event-source
	// MaximumConcurrency (5) when set; needs an account concurrency quota
	// above the default 10, or the deploy fails.
	CtxNotifyReserved = "notifyReservedConcurrency"
	// CtxReviewInstructions and CtxReviewInstructionsByRepo are the model
	// review's extra instructions (CRITICIZER_REVIEW_INSTRUCTIONS, and
	// CRITICIZER_REVIEW_INSTRUCTIONS_BY_REPO as a JSON object);
	// CtxLLMMaxFindings its findings cap (CRITICIZER_LLM_MAX_FINDINGS).
	CtxReviewInstructions       = "reviewInstructions"
	CtxReviewInstructionsByRepo = "reviewInstructionsByRepo"
	CtxLLMMaxFindings           = "llmMaxFindings"
	// CtxAllowedRecipientDomains lists the domains mail may go to
	// (CRITICIZER_ALLOWED_RECIPIENT_DOMAINS, comma-separated, exact; unset:
	// every domain), given to intake (a rerun's dry run) and notify.
	CtxAllowedRecipientDomains = "allowedRecipientDomains"
	// CtxUncertainSend is what a send whose answer was lost does once the
	// evidence path caught up past it with no SES event naming it
	// (CRITICIZER_UNCERTAIN_SEND, R-EVIDENCE-9): resend (default; the
	// email may come twice, alarmed) or hold (never resent without
	// evidence; it waits for its events or an operator).
	CtxUncertainSend = "uncertainSend"
)

// MaxAllowedRecipientDomains is config.MaxAllowedRecipientDomainsBytes:
// the longest list two environments carry within Lambda's 4 KB.
const MaxAllowedRecipientDomains = 1024

// DefaultMailFrom is config.go's default sender; deploying with it is
// flagged with a warning annotation.
const DefaultMailFrom = "Criticizer <criticizer@example.com>"

// Config is what the stack is built from.
type Config struct {
	AssetDir    string
	MailFrom    string
	SESIdentity string
	LogLevel    string
	AlarmEmail  string
	Critic      string
	CriticModel string
	OpenAIBase  string
	MaxSendRate string
	// NotifyReserved is notify's reserved concurrency; 0 reserves none.
	NotifyReserved float64
	// The model review's settings, passed to llm only when set.
	ReviewInstructions, ReviewInstructionsByRepo, LLMMaxFindings string
	// AllowedRecipientDomains, passed to intake and notify only when set.
	AllowedRecipientDomains string
	// UncertainSend is notify's CRITICIZER_UNCERTAIN_SEND: resend or hold.
	UncertainSend string
}

// ConfigFromContext reads the app's context with defaults.
func ConfigFromContext(node constructs.Node) (Config, error) {
	get := func(k, def string) string {
		if v, ok := node.TryGetContext(jsii.String(k)).(string); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		return def
	}
	c := Config{
		AssetDir:      get(CtxAssetDir, filepath.Join("..", "build")),
		MailFrom:      get(CtxMailFrom, DefaultMailFrom),
		LogLevel:      get(CtxLogLevel, "info"),
		AlarmEmail:    get(CtxAlarmEmail, ""),
		Critic:        get(CtxCritic, "offline"),
		CriticModel:   get(CtxCriticModel, ""),
		OpenAIBase:    get(CtxOpenAIBaseURL, ""),
		MaxSendRate:   get(CtxMaxSendRate, DefaultMaxSendRate),
		UncertainSend: get(CtxUncertainSend, "resend"),
	}
	if c.UncertainSend != "resend" && c.UncertainSend != "hold" {
		return Config{}, fmt.Errorf("context %s=%q: want resend or hold", CtxUncertainSend, c.UncertainSend)
	}
	if n, err := strconv.Atoi(c.MaxSendRate); err != nil || n < 0 {
		return Config{}, fmt.Errorf("context %s=%q: want a whole number of emails per second (0: no limit)", CtxMaxSendRate, c.MaxSendRate)
	}
	c.ReviewInstructions = get(CtxReviewInstructions, "")
	c.ReviewInstructionsByRepo = get(CtxReviewInstructionsByRepo, "")
	c.LLMMaxFindings = get(CtxLLMMaxFindings, "")
	if err := c.checkReview(); err != nil {
		return Config{}, err
	}
	c.AllowedRecipientDomains = get(CtxAllowedRecipientDomains, "")
	if n := len(c.AllowedRecipientDomains); n > MaxAllowedRecipientDomains {
		return Config{}, fmt.Errorf("context %s: %d bytes, at most %d", CtxAllowedRecipientDomains, n, MaxAllowedRecipientDomains)
	}
	if r := get(CtxNotifyReserved, "0"); r != "0" {
		n, err := strconv.Atoi(r)
		if err != nil || n < notifyMaxConcurrency() {
			return Config{}, fmt.Errorf("context %s=%q: want 0 (none) or at least notify's event-source maximum concurrency, %d",
				CtxNotifyReserved, r, notifyMaxConcurrency())
		}
		c.NotifyReserved = float64(n)
	}
	switch c.Critic {
	case "offline":
	case "bedrock", "openai":
		if c.CriticModel == "" {
			return Config{}, fmt.Errorf("context %s=%s needs %s (the model)", CtxCritic, c.Critic, CtxCriticModel)
		}
		if c.Critic == "bedrock" {
			if err := validBedrockModel(c.CriticModel); err != nil {
				return Config{}, fmt.Errorf("context %s: %w", CtxCriticModel, err)
			}
		}
	default:
		return Config{}, fmt.Errorf("context %s=%q: want offline, bedrock or openai", CtxCritic, c.Critic)
	}
	addr, err := mail.ParseAddress(c.MailFrom)
	if err != nil {
		return Config{}, fmt.Errorf("context %s=%q: %w", CtxMailFrom, c.MailFrom, err)
	}
	domain := addr.Address[strings.LastIndexByte(addr.Address, '@')+1:]
	c.SESIdentity = get(CtxSESIdentity, domain)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return Config{}, fmt.Errorf("context %s=%q: want debug, info, warn or error", CtxLogLevel, c.LogLevel)
	}
	return c, nil
}

// MaxReviewInstructions is config.MaxReviewInstructionsRunes: the
// characters of one set of review instructions the llm function accepts.
const MaxReviewInstructions = 2000

// checkReview refuses the model review's settings the llm function would
// refuse at start (internal/config's readCritic), so they fail synth
// instead of every review. Whether they fit Lambda's 4 KB environment is
// checkEnvironments' question.
func (c Config) checkReview() error {
	if n := utf8.RuneCountInString(c.ReviewInstructions); n > MaxReviewInstructions {
		return fmt.Errorf("context %s: %d characters, at most %d", CtxReviewInstructions, n, MaxReviewInstructions)
	}
	if c.ReviewInstructionsByRepo != "" {
		var byRepo map[string]string
		if err := json.Unmarshal([]byte(c.ReviewInstructionsByRepo), &byRepo); err != nil {
			return fmt.Errorf("context %s: want a JSON object of changelist id prefixes to instructions", CtxReviewInstructionsByRepo)
		}
		for k, v := range byRepo {
			if n := utf8.RuneCountInString(v); n > MaxReviewInstructions {
				return fmt.Errorf("context %s: the instructions for %q are %d characters, at most %d", CtxReviewInstructionsByRepo, k, n, MaxReviewInstructions)
			}
		}
	}
	if c.LLMMaxFindings != "" {
		if n, err := strconv.Atoi(c.LLMMaxFindings); err != nil || n < 1 || n > 50 {
			return fmt.Errorf("context %s=%q: want a whole number from 1 to 50", CtxLLMMaxFindings, c.LLMMaxFindings)
		}
	}
	return nil
}

// senderAddress is the bare address of MailFrom.
func (c Config) senderAddress() string {
	a, err := mail.ParseAddress(c.MailFrom)
	if err != nil {
		return c.MailFrom
	}
	return a.Address
}

// notifyMaxConcurrency is notify's event-source MaximumConcurrency.
func notifyMaxConcurrency() int {
	for _, f := range functionSpecs {
		if f.Name == FnNotify {
			return int(f.MaxConcurrency)
		}
	}
	return 0
}
