package pipeline_test

import (
	"context"

	"github.com/criticizer/criticizer/internal/job"
)

// nopQueue drops every stage message: a test that runs one stage.
type nopQueue struct{}

func (nopQueue) Enqueue(context.Context, job.Message) error { return nil }
