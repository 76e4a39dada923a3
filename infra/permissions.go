package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// permissions: least privilege per function. The SQS event sources already
// grant each consumer Receive/Delete/ChangeMessageVisibility/GetQueueAttributes
// on its own queue (the runner's backoff is ChangeMessageVisibility). Each
// stage may also send to its own queue: the runner defers a rate-limited
// message as a delayed copy of itself (internal/stage).
func (s *Stack) permissions() {
	s.grantIntake(s.Functions[FnIntake])
	s.grantFetch(s.Functions[FnFetch])
	s.grantLLM(s.Functions[FnLLM])
	s.grantNotify(s.Functions[FnNotify])
	s.grantFeedback(s.Functions[FnFeedback])
	s.grantSweeper(s.Functions[FnSweeper])
}

// grantIntake: intake writes jobs and their idempotency records, reads
// the outbox for the job view, stores diffs, enqueues at fetch, and reads
// the webhook and unsubscribe secrets.
func (s *Stack) grantIntake(f awslambda.Function) {
	s.Jobs.GrantReadWriteData(f)
	s.Deliveries.GrantReadData(f)
	s.grantDiffs(f, false, "s3:PutObject")
	s.Queues[QFetch].GrantSendMessages(f)
	s.Secret.GrantRead(f, nil)
	s.UnsubscribeSecret.GrantRead(f, nil)
}

// grantFetch: fetch touches its job's items and decides who reviews a
// version: the changelist's roster (GetItem), the directory's entries
// (BatchGetItem), and the directory's list of unknown reviewers
// (UpdateItem ADD); each on its own items only.
func (s *Stack) grantFetch(f awslambda.Function) {
	s.grantJobItems(f)
	s.grantKeyed(f, []string{"dynamodb:GetItem"}, RosterPrefix)
	s.grantKeyed(f, []string{"dynamodb:BatchGetItem"}, DirectoryPrefix)
	s.grantKeyed(f, []string{"dynamodb:UpdateItem"}, UnknownPrefix)
	s.grantDiffs(f, true, "s3:PutObject", "s3:GetObject")
	s.Queues[QLLM].GrantSendMessages(f)
	s.Queues[QFetch].GrantSendMessages(f)
	s.DLQs[QFetch].GrantSendMessages(f)
	s.StageSecrets[IDFetchSecret].GrantRead(f, nil)
}

// grantLLM: llm touches its job's items, spends from the model-run
// budgets (UpdateItem on BUDGET# items, in a TransactWriteItems, which
// IAM authorizes per item action; R-BUDGET-1), reads the diff, enqueues at
// notify, reads its secret, and with the bedrock critic invokes the model.
func (s *Stack) grantLLM(f awslambda.Function) {
	s.grantJobItems(f)
	s.grantKeyed(f, []string{"dynamodb:UpdateItem"}, BudgetPrefix)
	s.grantDiffs(f, true, "s3:GetObject")
	s.Queues[QNotify].GrantSendMessages(f)
	s.Queues[QLLM].GrantSendMessages(f)
	s.DLQs[QLLM].GrantSendMessages(f)
	s.StageSecrets[IDCriticSecret].GrantRead(f, nil)
	if s.Config.Critic == "bedrock" {
		s.grantBedrock(f)
	}
}

// grantBedrock allows Converse on the chosen model or inference profile
// only (bedrock.go: what each kind of model id needs).
func (s *Stack) grantBedrock(f awslambda.Function) {
	g := bedrockGrantFor(s.Stack, s.Config.CriticModel)
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("bedrock:InvokeModel"), Resources: &g.Resources,
	}))
	if len(g.Conditioned) > 0 {
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("bedrock:InvokeModel"), Resources: &g.Conditioned,
			Conditions: &map[string]any{"StringEquals": map[string]any{"bedrock:InferenceProfileArn": g.ProfileARN}},
		}))
	}
}

// grantNotify: the read half of GrantReadWriteData includes BatchGetItem,
// with which notify reads recipients' PREF#/SUPP# items before sending;
// it sends mail as the sender through the configuration set only.
func (s *Stack) grantNotify(f awslambda.Function) {
	s.Jobs.GrantReadWriteData(f)
	s.UnsubscribeSecret.GrantRead(f, nil)
	s.Deliveries.GrantReadWriteData(f)
	s.Queues[QNotify].GrantSendMessages(f)
	s.DLQs[QNotify].GrantSendMessages(f)
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SendAsTheSenderThroughTheConfigurationSet"),
		Actions:   jsii.Strings("ses:SendEmail"),
		Resources: s.sesResources(),
	}))
	// The account's sending quota (SES v2 GetAccount): notify paces at the
	// account's rate and pauses when its daily quota is spent (R-RATE-2,
	// R-RATE-3). GetAccount acts on the account in the region, not on a
	// resource: IAM accepts it only on "*" (supSESAccount).
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadTheAccountsSendingQuota"),
		Actions:   jsii.Strings("ses:GetAccount"),
		Resources: jsii.Strings("*"),
	}))
}

// grantFeedback: feedback consumes its own queue (the event source grants
// that) and sends to the notify queue only: a transient bounce enqueues
// the delivery's job at notify again. On the jobs table only UpdateItem:
// suppressions are idempotent UpdateItem upserts of SUPP#<id> items
// (store.Recipients.Suppress) and the resend's reopen is a conditional
// UpdateItem (store.Jobs.Reopen); it reads nothing there.
func (s *Stack) grantFeedback(f awslambda.Function) {
	s.Deliveries.GrantReadWriteData(f)
	s.Jobs.Grant(f, jsii.String("dynamodb:UpdateItem"))
	s.Queues[QNotify].GrantSendMessages(f)
	// A record that can never be evidence is copied under the quarantine
	// prefix, and only there (R-EVIDENCE-10).
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("s3:PutObject"), Resources: &[]*string{s.Bucket.ArnForObjects(jsii.String(QuarantinePrefix + "*"))}}))
}

// grantSweeper: the sweeper reads both tables' live indexes and items,
// re-enqueues at any stage, and reads the counters of the feedback queue
// and its DLQ (GetQueueAttributes only: it neither receives nor deletes
// there) to find the evidence path drained (internal/drain).
func (s *Stack) grantSweeper(f awslambda.Function) {
	s.Jobs.GrantReadWriteData(f)
	s.Deliveries.GrantReadWriteData(f)
	for _, q := range []string{QFetch, QLLM, QNotify} {
		s.Queues[q].GrantSendMessages(f)
	}
	s.Queues[QFeedback].Grant(f, jsii.String("sqs:GetQueueAttributes"))
	s.DLQs[QFeedback].Grant(f, jsii.String("sqs:GetQueueAttributes"))
}

// grantDiffs allows actions on the diff objects (diffs/* in the payload
// bucket), and with withList ListBucket on the bucket: without it a
// missing key is AccessDenied, not NoSuchKey (internal/blob maps NoSuchKey
// to ErrNotFound).
func (s *Stack) grantDiffs(f awslambda.Function, withList bool, actions ...string) {
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(actions...), Resources: &[]*string{s.Bucket.ArnForObjects(jsii.String("diffs/*"))}}))
	if withList {
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("s3:ListBucket"), Resources: &[]*string{s.Bucket.BucketArn()}}))
	}
}

// grantJobItems: fetch and llm read and update their job (JOB#<id>) and
// read its source reference (SRC#<id>) in the jobs table, nothing else:
// not the unsubscribe and suppression records, the idempotency records or
// the version counters, and no delete (the condition limits the partition
// keys a call may name).
func (s *Stack) grantJobItems(f awslambda.Function) {
	s.grantKeyed(f, []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, JobItemPrefix, SourceRefPrefix)
}

// grantKeyed allows actions on the jobs table's items whose partition key
// starts with one of prefixes, and on no others.
func (s *Stack) grantKeyed(f awslambda.Function, actions []string, prefixes ...string) {
	keys := make([]string, len(prefixes))
	for i, p := range prefixes {
		keys[i] = p + "*"
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: &[]*string{s.Jobs.TableArn()},
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": keys}},
	}))
}

// sesResources are the ARNs SES v2 authorizes SendEmail against: the
// sending identity (the configured one and, when different, the address
// itself, whichever is verified) and the configuration set.
func (s *Stack) sesResources() *[]*string {
	arn := func(resource, name string) *string {
		return s.Stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ses"), Resource: jsii.String(resource), ResourceName: jsii.String(name)})
	}
	out := []*string{arn("identity", s.Config.SESIdentity)}
	if addr := s.Config.senderAddress(); addr != s.Config.SESIdentity {
		out = append(out, arn("identity", addr))
	}
	out = append(out, s.Stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ses"), Resource: jsii.String("configuration-set"),
		ResourceName: s.ConfigSet.ConfigurationSetName()}))
	return &out
}
