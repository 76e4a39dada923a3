package cost

import (
	"errors"
	"fmt"
)

// Machine is an Amazon States Language state machine, as much of it as
// counting state transitions needs. Its JSON form is valid ASL.
type Machine struct {
	Comment string           `json:"Comment,omitempty"`
	StartAt string           `json:"StartAt"`
	States  map[string]State `json:"States"`
}

// State is one state of a Machine.
type State struct {
	Type     string `json:"Type"` // Task, Map, Succeed
	Comment  string `json:"Comment,omitempty"`
	Resource string `json:"Resource,omitempty"`
	Next     string `json:"Next,omitempty"`
	End      bool   `json:"End,omitempty"`
	// ItemsPath and ItemProcessor: a Map state runs ItemProcessor once per
	// item of the array at ItemsPath.
	ItemsPath      string   `json:"ItemsPath,omitempty"`
	MaxConcurrency int      `json:"MaxConcurrency,omitempty"`
	ItemProcessor  *Machine `json:"ItemProcessor,omitempty"`
	Retry          []Retry  `json:"Retry,omitempty"`
}

// Retry is a Task's retrier.
type Retry struct {
	ErrorEquals     []string `json:"ErrorEquals"`
	IntervalSeconds int      `json:"IntervalSeconds"`
	MaxAttempts     int      `json:"MaxAttempts"`
	BackoffRate     float64  `json:"BackoffRate"`
}

// ReviewMachine is the review as a Step Functions standard workflow
// would run it: the same work as the fetch, llm and notify functions,
// with the queues between them replaced by the workflow's own states.
// Intake stays an API function that starts an execution (StartExecution
// is not billed by transition); provider evidence keeps its own path
// (SES → SNS → SQS → feedback), since a workflow cannot wait on an event
// that may never come more cheaply than a queue does.
//
//   - Fetch, Critique: one Task each (a Lambda function each, as now).
//   - PrepareDeliveries: reads every recipient's standing and creates the
//     delivery rows with their rendered messages (R-OUTBOX-2), returning the
//     rows to send.
//   - SendEach: a Map over those rows, at most 5 at once (notify's
//     concurrency now): per row one Send task (rate slot, claim, send,
//     mark: R-OUTBOX-4 needs them in one worker).
//   - Finalize: the job is succeeded once every row is (R-OUTBOX-8).
//
// Every task keeps the stage budget of 5 attempts as a Retry; retries are
// transitions too, but the count here is the happy path, as the queue
// design's figures are.
func ReviewMachine() Machine {
	lambda := "arn:aws:states:::lambda:invoke"
	retry := []Retry{{ErrorEquals: []string{"States.TaskFailed"}, IntervalSeconds: 1, MaxAttempts: 4, BackoffRate: 2}}
	return Machine{
		Comment: "Criticizer review as a Step Functions standard workflow (cost comparison only)",
		StartAt: "Fetch",
		States: map[string]State{
			"Fetch":             {Type: "Task", Resource: lambda, Comment: "fetch: the diff into S3", Retry: retry, Next: "Critique"},
			"Critique":          {Type: "Task", Resource: lambda, Comment: "llm: the critique onto the job", Retry: retry, Next: "PrepareDeliveries"},
			"PrepareDeliveries": {Type: "Task", Resource: lambda, Comment: "notify: standing, delivery rows with rendered messages", Retry: retry, Next: "SendEach"},
			"SendEach": {Type: "Map", ItemsPath: "$.Payload.deliveries", MaxConcurrency: 5, Next: "Finalize",
				ItemProcessor: &Machine{StartAt: "Send", States: map[string]State{
					"Send": {Type: "Task", Resource: lambda, Comment: "notify: rate slot, claim, SendEmail, mark sent", Retry: retry, End: true},
				}}},
			"Finalize": {Type: "Task", Resource: lambda, Comment: "notify: job succeeded", Retry: retry, Next: "Done"},
			"Done":     {Type: "Succeed"},
		},
	}
}

// Transitions counts the state transitions one execution makes on its
// happy path when every Map iterates over items: one per state entered
// (a Map once, plus its processor's transitions per item; a Succeed
// state too), no retries.
func (m Machine) Transitions(items int) (int, error) {
	if items < 0 {
		return 0, errors.New("cost: negative item count")
	}
	n, name := 0, m.StartAt
	seen := map[string]bool{}
	for {
		s, ok := m.States[name]
		if !ok {
			return 0, fmt.Errorf("cost: state %q is not defined", name)
		}
		if seen[name] {
			return 0, fmt.Errorf("cost: state %q is entered twice: the happy path loops", name)
		}
		seen[name] = true
		n++
		if s.Type == "Map" {
			if s.ItemProcessor == nil {
				return 0, fmt.Errorf("cost: map state %q has no item processor", name)
			}
			per, err := s.ItemProcessor.Transitions(items)
			if err != nil {
				return 0, err
			}
			n += items * per
		}
		switch {
		case s.Type == "Succeed" || s.Type == "Fail" || s.End:
			return n, nil
		case s.Next == "":
			return 0, fmt.Errorf("cost: state %q neither ends nor names a next state", name)
		}
		name = s.Next
	}
}
