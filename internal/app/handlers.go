package app

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/sweeper"
)

// Functions lists every Lambda function by name, as in functions/<name>.
func Functions() []string {
	names := []string{"intake", "fetch", "llm", "notify", "feedback", "sweeper"}
	sort.Strings(names)
	return names
}

// Handler returns the Lambda handler of a function, the value its main
// passes to lambda.Start. The local `devstack invoke` and the events/ tests
// wrap the same value with lambda.NewHandler, so a sample event goes through
// the runtime's own decoding.
func (a *App) Handler(name string) (any, error) {
	switch name {
	case "intake":
		h, err := a.API()
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	case string(job.StageFetch), string(job.StageLLM), string(job.StageNotify):
		s := job.Stage(name)
		fn, err := a.StageFunc(s)
		if err != nil {
			return nil, err
		}
		return a.Runner(s, fn).Handle, nil
	case "feedback":
		return a.Feedback().Handle, nil
	case "sweeper":
		s := a.Sweeper()
		return func(ctx context.Context, _ events.EventBridgeEvent) (sweeper.Report, error) { return s.Run(ctx) }, nil
	}
	return nil, fmt.Errorf("unknown function %q (one of %v)", name, Functions())
}
