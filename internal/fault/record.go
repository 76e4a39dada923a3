package fault

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Call is one AWS operation a function's clients made: the SDK's service
// id and operation name, and the operation's input as the caller gave it
// (*dynamodb.PutItemInput…), for a test to read which resources it named.
type Call struct {
	Function, Service, Operation string
	Input                        any
}

// Recorder records the AWS operations each function makes, as the
// injector sees them: once per operation (not per attempt of the SDK's
// retry loop), whether or not it succeeded. The least-privilege test
// compares them with each function's grants (internal/e2e).
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Option records the operations of the clients built from a config as
// function's (an awsclient.Option).
func (r *Recorder) Option(function string) func(*aws.Config) {
	return func(cfg *aws.Config) {
		cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("criticizer-fault-record",
				func(ctx context.Context, x middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					r.mu.Lock()
					r.calls = append(r.calls, Call{Function: function, Service: awsmiddleware.GetServiceID(ctx),
						Operation: awsmiddleware.GetOperationName(ctx), Input: x.Parameters})
					r.mu.Unlock()
					return next.HandleInitialize(ctx, x)
				}), middleware.After)
		})
	}
}

// Calls are the operations recorded so far, in order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}
