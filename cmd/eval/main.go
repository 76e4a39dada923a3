// Command eval measures critics on changes with planted bugs
// (internal/critic/eval; docs/eval.md): found, missed and false findings
// and tokens per review.
//
//	eval                       the offline critic and the recording stand-in
//	eval -critic offline,bedrock
//	                           bedrock and openai read their settings from the
//	                           environment, as the llm function does
//	                           (CRITICIZER_BEDROCK_MODEL_ID, CRITICIZER_OPENAI_*)
//	eval -votes table          also readers' votes per rule, read from the
//	                           jobs table (CRITICIZER_JOBS_TABLE, and
//	                           AWS_ENDPOINT_URL_DYNAMODB locally)
//	eval -votes votes.json     the same from a file of votes (a JSON array,
//	                           as -save-votes writes it)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/criticizer/criticizer/internal/awsclient/profile"
	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/critic/eval"
	"github.com/criticizer/criticizer/internal/critic/openai"
	"github.com/criticizer/criticizer/internal/wire/llm"
)

func main() {
	critics := flag.String("critic", "offline,standin", "comma-separated: offline, standin, bedrock, openai")
	votesFrom := flag.String("votes", "", `readers' votes per rule: "table" (the jobs table) or a JSON file; empty: none`)
	saveVotes := flag.String("save-votes", "", "write the votes read to this JSON file")
	flag.Parse()
	ctx := context.Background()
	if err := run(ctx, strings.Split(*critics, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
	if err := reportVotes(ctx, os.Stdout, *votesFrom, *saveVotes); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, names []string) error {
	cases, err := eval.Cases()
	if err != nil {
		return err
	}
	fmt.Printf("%d cases, %d planted bugs (internal/critic/eval/cases; docs/eval.md)\n\n", len(cases), bugs(cases))
	for _, name := range names {
		c, closeFn, err := criticFor(ctx, strings.TrimSpace(name), cases)
		if err != nil {
			return err
		}
		eval.Print(os.Stdout, name, eval.Run(ctx, c, cases))
		fmt.Println()
		closeFn()
	}
	return nil
}

func bugs(cases []eval.Case) int {
	n := 0
	for _, c := range cases {
		n += len(c.Bugs)
	}
	return n
}

func criticFor(ctx context.Context, name string, cases []eval.Case) (critic.Critic, func(), error) {
	switch name {
	case "offline":
		return critic.NewOffline(), func() {}, nil
	case "standin":
		s := eval.StandIn(cases)
		m, err := openai.New(openai.Config{BaseURL: s.URL, Model: "recorded-stand-in", HTTPClient: s.Client()})
		if err != nil {
			return nil, nil, err
		}
		l, err := critic.NewLLM(m)
		return l, s.Close, err
	case "bedrock", "openai":
		cfg, err := config.FromEnv(os.Getenv)
		if err != nil {
			return nil, nil, err
		}
		cfg.LLM.Critic = name
		if err := cfg.Validate(); err != nil {
			return nil, nil, err
		}
		awsCfg, err := profile.Load(ctx, cfg.Endpoints)
		if err != nil {
			return nil, nil, err
		}
		c, err := llm.Critic(cfg, awsCfg)
		return c, func() {}, err
	}
	return nil, nil, fmt.Errorf("unknown critic %q (offline, standin, bedrock, openai)", name)
}
