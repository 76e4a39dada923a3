package cost

import (
	"math"
	"sort"
)

// Usage is what some work consumed of each billed dimension. The
// benchmark fills it from measurements (consumed capacity as DynamoDB
// reported it, requests as the clients made them, handler durations as
// timed); each field says its unit.
type Usage struct {
	DynamoDBReadUnits  float64 // read request units
	DynamoDBWriteUnits float64 // write request units, table and indexes
	DynamoDBGBMonths   float64 // item storage for as long as it is kept

	SQSRequests  float64 // 64 KB request units (send, non-empty receive, delete, visibility)
	SNSPublishes float64 // 64 KB publish units

	S3Puts, S3Gets float64
	S3GBMonths     float64

	SESMessages float64 // recipients mailed
	DataOutGB   float64 // mail bytes leaving AWS

	LambdaRequests  float64
	LambdaGBSeconds float64

	HTTPAPIRequests float64

	LogGB float64 // CloudWatch Logs ingested

	StepFunctionsTransitions float64
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		DynamoDBReadUnits: u.DynamoDBReadUnits + v.DynamoDBReadUnits, DynamoDBWriteUnits: u.DynamoDBWriteUnits + v.DynamoDBWriteUnits,
		DynamoDBGBMonths: u.DynamoDBGBMonths + v.DynamoDBGBMonths,
		SQSRequests:      u.SQSRequests + v.SQSRequests, SNSPublishes: u.SNSPublishes + v.SNSPublishes,
		S3Puts: u.S3Puts + v.S3Puts, S3Gets: u.S3Gets + v.S3Gets, S3GBMonths: u.S3GBMonths + v.S3GBMonths,
		SESMessages: u.SESMessages + v.SESMessages, DataOutGB: u.DataOutGB + v.DataOutGB,
		LambdaRequests: u.LambdaRequests + v.LambdaRequests, LambdaGBSeconds: u.LambdaGBSeconds + v.LambdaGBSeconds,
		HTTPAPIRequests: u.HTTPAPIRequests + v.HTTPAPIRequests, LogGB: u.LogGB + v.LogGB,
		StepFunctionsTransitions: u.StepFunctionsTransitions + v.StepFunctionsTransitions,
	}
}

// Scale returns u × k (per review: a run's total scaled by 1/reviews).
func (u Usage) Scale(k float64) Usage {
	return Usage{
		DynamoDBReadUnits: u.DynamoDBReadUnits * k, DynamoDBWriteUnits: u.DynamoDBWriteUnits * k,
		DynamoDBGBMonths: u.DynamoDBGBMonths * k,
		SQSRequests:      u.SQSRequests * k, SNSPublishes: u.SNSPublishes * k,
		S3Puts: u.S3Puts * k, S3Gets: u.S3Gets * k, S3GBMonths: u.S3GBMonths * k,
		SESMessages: u.SESMessages * k, DataOutGB: u.DataOutGB * k,
		LambdaRequests: u.LambdaRequests * k, LambdaGBSeconds: u.LambdaGBSeconds * k,
		HTTPAPIRequests: u.HTTPAPIRequests * k, LogGB: u.LogGB * k,
		StepFunctionsTransitions: u.StepFunctionsTransitions * k,
	}
}

// Service names the lines of a Bill, in the order they are printed.
const (
	SvcDynamoDB      = "DynamoDB"
	SvcSQS           = "SQS"
	SvcSNS           = "SNS"
	SvcS3            = "S3"
	SvcSES           = "SES"
	SvcLambda        = "Lambda"
	SvcAPIGateway    = "API Gateway"
	SvcLogs          = "CloudWatch Logs"
	SvcStepFunctions = "Step Functions"
)

// Services are the services a Bill may hold, in print order.
func Services() []string {
	return []string{SvcSES, SvcDynamoDB, SvcSQS, SvcSNS, SvcS3, SvcLambda, SvcAPIGateway, SvcLogs, SvcStepFunctions}
}

// Line is one priced dimension.
type Line struct {
	Service, Item string
	Quantity      float64
	USD           float64
}

// Bill is a priced Usage.
type Bill []Line

// Price prices u.
func (p Prices) Price(u Usage) Bill {
	lines := []Line{
		{SvcSES, "messages", u.SESMessages, p.SESMessage.Of(u.SESMessages)},
		{SvcSES, "data out (GB)", u.DataOutGB, p.DataOut.Of(u.DataOutGB)},
		{SvcDynamoDB, "write units", u.DynamoDBWriteUnits, p.DynamoDBWrite.Of(u.DynamoDBWriteUnits)},
		{SvcDynamoDB, "read units", u.DynamoDBReadUnits, p.DynamoDBRead.Of(u.DynamoDBReadUnits)},
		{SvcDynamoDB, "storage (GB-month)", u.DynamoDBGBMonths, p.DynamoDBStorage.Of(u.DynamoDBGBMonths)},
		{SvcSQS, "requests", u.SQSRequests, p.SQSRequest.Of(u.SQSRequests)},
		{SvcSNS, "publishes", u.SNSPublishes, p.SNSPublish.Of(u.SNSPublishes)},
		{SvcS3, "PUT requests", u.S3Puts, p.S3Put.Of(u.S3Puts)},
		{SvcS3, "GET requests", u.S3Gets, p.S3Get.Of(u.S3Gets)},
		{SvcS3, "storage (GB-month)", u.S3GBMonths, p.S3Storage.Of(u.S3GBMonths)},
		{SvcLambda, "invocations", u.LambdaRequests, p.LambdaRequest.Of(u.LambdaRequests)},
		{SvcLambda, "GB-seconds", u.LambdaGBSeconds, p.LambdaGBSecond.Of(u.LambdaGBSeconds)},
		{SvcAPIGateway, "HTTP API requests", u.HTTPAPIRequests, p.HTTPAPIRequest.Of(u.HTTPAPIRequests)},
		{SvcLogs, "ingested (GB)", u.LogGB, p.LogsIngestion.Of(u.LogGB)},
		{SvcStepFunctions, "state transitions", u.StepFunctionsTransitions, p.StepFunctionsTransition.Of(u.StepFunctionsTransitions)},
	}
	out := lines[:0]
	for _, l := range lines {
		if l.Quantity != 0 {
			out = append(out, l)
		}
	}
	return out
}

// Total is the bill's sum.
func (b Bill) Total() float64 {
	t := 0.0
	for _, l := range b {
		t += l.USD
	}
	return t
}

// ByService sums the bill per service.
func (b Bill) ByService() map[string]float64 {
	m := map[string]float64{}
	for _, l := range b {
		m[l.Service] += l.USD
	}
	return m
}

// Without is the bill's sum leaving out the named services.
func (b Bill) Without(services ...string) float64 {
	t := 0.0
	for _, l := range b {
		if !contains(services, l.Service) {
			t += l.USD
		}
	}
	return t
}

// Largest returns the n most expensive lines, most expensive first.
func (b Bill) Largest(n int) Bill {
	c := append(Bill(nil), b...)
	sort.SliceStable(c, func(i, j int) bool { return c[i].USD > c[j].USD })
	return c[:min(n, len(c))]
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// GoalRatio is what the goal compares: the infrastructure of a
// review (everything but the model, SES included) over what SES charges
// for its emails. The goal for a single-recipient review is at most 1.1,
// that is, everything else at most a tenth of the email's price.
func GoalRatio(b Bill) float64 {
	ses := b.ByService()[SvcSES]
	if ses == 0 {
		return math.Inf(1)
	}
	return b.Total() / ses
}

// GBSeconds is what Lambda bills for invocations that ran durationsMS
// (each rounded up to the next millisecond) at memoryMB.
func GBSeconds(memoryMB int, durationsMS ...float64) float64 {
	total := 0.0
	for _, d := range durationsMS {
		total += math.Ceil(d)
	}
	return float64(memoryMB) / 1024 * total / 1000
}

// Chunks64K is how many requests SQS and SNS bill for a payload of n
// bytes: one per started 64 KB, at least one.
func Chunks64K(n int) float64 {
	if n <= 0 {
		return 1
	}
	return math.Ceil(float64(n) / (64 * 1024))
}

// GB is the gigabyte AWS bills storage, data and logs in (2^30 bytes).
const GB = 1 << 30

// GBMonths is the storage of bytes kept for days (a month being 30 days,
// as AWS prorates).
func GBMonths(bytes, days float64) float64 { return bytes / GB * days / 30 }
