package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
)

// JobReport is a job with its delivery rows, as an operator sees it
// (addresses unmasked: the operator has the table's read permission anyway).
type JobReport struct {
	Job        job.Job  `json:"job"`
	Recipients []string `json:"recipients"`
	// UnknownReviewers are the reviewers no directory entry resolved, as
	// "<source>:<username>": whom to add (criticizer directory set).
	UnknownReviewers []string       `json:"unknown_reviewers"`
	Deliveries       []DeliveryView `json:"deliveries"`
}

// DeliveryView is a delivery row without its message body.
type DeliveryView struct {
	DeliveryID      string          `json:"delivery_id"`
	Recipient       string          `json:"recipient"`
	Status          delivery.Status `json:"status"`
	Attempts        int             `json:"attempts"`
	NotificationID  string          `json:"notification_id,omitempty"`
	NotifiedAt      string          `json:"notified_at,omitempty"`
	LeaseUntil      string          `json:"lease_until,omitempty"`
	LastErrorClass  string          `json:"last_error_class,omitempty"`
	Subject         string          `json:"subject"`
	TemplateVersion string          `json:"template_version"`
	ContentSHA256   string          `json:"content_sha256"`
}

func viewRow(r delivery.Row) DeliveryView {
	v := DeliveryView{DeliveryID: r.ID, Recipient: r.Recipient, Status: r.Status, Attempts: r.Attempts,
		NotificationID: r.NotificationID, LastErrorClass: r.LastErrorClass, Subject: r.Message.Subject,
		TemplateVersion: r.Message.TemplateVersion, ContentSHA256: r.Message.ContentSHA256}
	if !r.NotifiedAt.IsZero() {
		v.NotifiedAt = r.NotifiedAt.Format(time.RFC3339)
	}
	if !r.LeaseUntil.IsZero() {
		v.LeaseUntil = r.LeaseUntil.Format(time.RFC3339)
	}
	return v
}

// Job reads a job and its delivery rows.
func (o *Ops) Job(ctx context.Context, id job.ID) (JobReport, error) {
	j, err := o.Jobs.Get(ctx, id)
	if err != nil {
		return JobReport{}, err
	}
	clKey := job.ChangelistKey(j.Source, j.ChangelistID)
	recipients := j.AllRecipients()
	unknown := []string{}
	if j.Source != "generic" {
		if unknown, err = o.Jobs.NoEmailReviewers(ctx, j.ID); err != nil {
			return JobReport{}, err
		}
	}
	ids := make([]string, 0, len(recipients)+len(unknown))
	for _, r := range append(append([]string(nil), recipients...), unknown...) {
		ids = append(ids, delivery.ID(clKey, r, j.ReviewVersion))
	}
	rows, err := o.Deliveries.GetMany(ctx, ids)
	if err != nil {
		return JobReport{}, err
	}
	rep := JobReport{Job: j, Recipients: recipients, UnknownReviewers: unknown, Deliveries: make([]DeliveryView, 0, len(rows))}
	for _, r := range rows {
		rep.Deliveries = append(rep.Deliveries, viewRow(r))
	}
	return rep, nil
}

// ChangelistJob finds the job of a changelist's latest accepted version.
func (o *Ops) ChangelistJob(ctx context.Context, source, changelistID string) (JobReport, error) {
	_, id, err := o.Jobs.LatestVersion(ctx, source, changelistID)
	if err != nil {
		return JobReport{}, fmt.Errorf("changelist %s/%s: %w", source, changelistID, err)
	}
	return o.Job(ctx, id)
}
