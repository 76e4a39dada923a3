package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/api"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/ops"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/store/dynamo"
	"github.com/criticizer/criticizer/internal/store/storetest"
	"github.com/criticizer/criticizer/internal/testenv"
)

// A version the llm stage refused shows why, on DynamoDB Local: the
// status link's view (GET /jobs/{id}) and the CLI's report (criticizer
// jobs show) carry the terminal status, the reason and the team members
// not mailed.
// Rules: R-BUDGET-1, R-REVIEWERS-6.
func TestJobStatus_BudgetExceeded_ShowsTheReason(t *testing.T) {
	ctx := context.Background()
	env := testenv.Stack(t)
	res := testenv.Provision(t, env)
	jobs := dynamo.NewJobs(env.Clients.DynamoDB, res.JobsTable, nil)
	rows := dynamo.NewDeliveries(env.Clients.DynamoDB, res.DeliveriesTable, nil)
	j := storetest.NewJob("budget-view", 3)
	storetest.Create(t, jobs, j, "k-budget-view", "sha")
	if err := jobs.Advance(ctx, j.ID, job.StageFetch, 1, job.StatusInProgress, store.JobWrite{
		TeamMembersNotMailed: map[string]int{"everyone": 27}}); err != nil {
		t.Fatal(err)
	}
	const reason = "the changelist's budget of 6 model runs an hour is spent"
	if err := jobs.SetStatus(ctx, j.ID, job.StageLLM, job.StatusBudgetExceeded, store.JobWrite{SkipReason: reason}); err != nil {
		t.Fatal(err)
	}

	links := api.NewStatusLinks("status-key-0123456789abcdef0123456789")
	h := &api.Handler{Jobs: jobs, Deliveries: rows, Status: links, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	_, token, _ := strings.Cut(links.Link(j.ID), "?token=")
	resp, err := h.Handle(ctx, events.APIGatewayV2HTTPRequest{RawPath: "/jobs/" + string(j.ID),
		QueryStringParameters: map[string]string{"token": token},
		RequestContext:        events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet}}})
	if err != nil {
		t.Fatal(err)
	}
	var v api.JobView
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(resp.Body), &v) != nil {
		t.Fatalf("GET /jobs: %d %s", resp.StatusCode, resp.Body)
	}
	if v.Status != job.StatusBudgetExceeded || v.SkipReason != reason || v.TeamMembersNotMailed["everyone"] != 27 {
		t.Fatalf("status view %s %q %v, want budget_exceeded with its reason and 27 not mailed", v.Status, v.SkipReason, v.TeamMembersNotMailed)
	}

	rep, err := (&ops.Ops{Jobs: jobs, Deliveries: rows}).Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep)
	var got struct {
		Job struct {
			Status     job.Status     `json:"status"`
			SkipReason string         `json:"skip_reason"`
			NotMailed  map[string]int `json:"team_members_not_mailed"`
		} `json:"job"`
	}
	if json.Unmarshal(b, &got) != nil || got.Job.Status != job.StatusBudgetExceeded || got.Job.SkipReason != reason || got.Job.NotMailed["everyone"] != 27 {
		t.Fatalf("criticizer jobs show: %s", b)
	}
}
