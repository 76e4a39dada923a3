// Package cost prices what a review consumes: the dated list prices of the
// AWS services Criticizer runs on and of the models its LLM critics call,
// the arithmetic that turns measured consumption into dollars, and the
// Step Functions design `make bench` compares the queues with.
//
// The prices are a table in code, not a lookup: a figure printed by the
// benchmark must say which price it used and when that price was read, and
// a price that changes must change here, in one place, with its new date
// (docs/benchmarks.md lists each one with its source).
package cost

// Price is one list price: USD for Per units of Unit.
type Price struct {
	USD  float64
	Per  float64 // how many units USD buys (1e6 for "per million")
	Unit string
	// Source is where the figure was read; Taken is when (YYYY-MM-DD).
	Source, Taken string
	// Note qualifies the figure (a tier, an assumption, a doubt).
	Note string
}

// Each is the price of one unit.
func (p Price) Each() float64 {
	if p.Per == 0 {
		return 0
	}
	return p.USD / p.Per
}

// Of is the price of n units.
func (p Price) Of(n float64) float64 { return n * p.Each() }

// Prices are the list prices of one region, paid tier (no free tier: a
// platform team running Criticizer next to other work has used it up).
type Prices struct {
	Region string

	DynamoDBWrite   Price // on-demand write request unit
	DynamoDBRead    Price // on-demand read request unit
	DynamoDBStorage Price // GB-month, Standard table class

	SQSRequest Price // standard queue, per 64 KB chunk of a request
	SNSPublish Price // standard topic publish, per 64 KB chunk

	S3Put     Price // PUT, COPY, POST, LIST
	S3Get     Price // GET, SELECT and all other requests
	S3Storage Price // GB-month, S3 Standard

	SESMessage Price // outbound, per recipient (à la carte)
	DataOut    Price // data transfer out to the internet, per GB

	LambdaRequest  Price // per invocation
	LambdaGBSecond Price // arm64, first tier

	HTTPAPIRequest Price // API Gateway HTTP API, per 512 KB request

	LogsIngestion Price // CloudWatch Logs, standard class, per GB

	StepFunctionsTransition Price // standard workflows
}

// The date the prices below were read, through the project's search of
// the public pricing pages (docs/benchmarks.md, "Prices").
const taken = "2026-11-24"

// USEast1 are the us-east-1 list prices as of taken.
func USEast1() Prices {
	return Prices{
		Region: "us-east-1",
		DynamoDBWrite: Price{USD: 0.625, Per: 1e6, Unit: "write request unit", Taken: taken,
			Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
			Note:   "on-demand, after the 50% cut effective 2024-11-01; 1 WRU = a standard write of up to 1 KB, 2 for a transactional write"},
		DynamoDBRead: Price{USD: 0.125, Per: 1e6, Unit: "read request unit", Taken: taken,
			Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
			Note:   "on-demand, after the 2024-11-01 cut; 1 RRU = a strongly consistent read of up to 4 KB"},
		DynamoDBStorage: Price{USD: 0.25, Per: 1, Unit: "GB-month", Taken: taken,
			Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
			Note:   "Standard table class, beyond the first 25 GB; 100 bytes of overhead per item"},
		SQSRequest: Price{USD: 0.40, Per: 1e6, Unit: "request", Taken: taken,
			Source: "https://aws.amazon.com/sqs/pricing/",
			Note:   "standard queue, first 100 billion requests a month; each 64 KB chunk of a payload is one request"},
		SNSPublish: Price{USD: 0.50, Per: 1e6, Unit: "publish", Taken: taken,
			Source: "https://aws.amazon.com/sns/pricing/",
			Note:   "standard topic; each 64 KB chunk is one request; deliveries to SQS carry no SNS charge"},
		S3Put: Price{USD: 0.005, Per: 1000, Unit: "PUT request", Taken: taken,
			Source: "https://aws.amazon.com/s3/pricing/", Note: "S3 Standard: PUT, COPY, POST, LIST"},
		S3Get: Price{USD: 0.0004, Per: 1000, Unit: "GET request", Taken: taken,
			Source: "https://aws.amazon.com/s3/pricing/", Note: "S3 Standard: GET, SELECT and all other requests"},
		S3Storage: Price{USD: 0.023, Per: 1, Unit: "GB-month", Taken: taken,
			Source: "https://aws.amazon.com/s3/pricing/", Note: "S3 Standard, first 50 TB"},
		SESMessage: Price{USD: 0.10, Per: 1000, Unit: "recipient", Taken: taken,
			Source: "https://aws.amazon.com/ses/pricing/",
			Note:   "à la carte outbound ($0.0001 per recipient, AWS Price List for AmazonSES, publication 2026-07-22); attachment data $0.12/GB (none here)"},
		DataOut: Price{USD: 0.09, Per: 1, Unit: "GB", Taken: taken,
			Source: "https://aws.amazon.com/ec2/pricing/on-demand/ (data transfer out to the internet, first 10 TB)",
			Note:   "the SES pricing page lists no per-GB charge for message bodies; an SES bill with a DataTransfer-Out line suggests mail is billed as data out, so it is counted"},
		LambdaRequest: Price{USD: 0.20, Per: 1e6, Unit: "invocation", Taken: taken,
			Source: "https://aws.amazon.com/lambda/pricing/"},
		LambdaGBSecond: Price{USD: 0.0000133334, Per: 1, Unit: "GB-second", Taken: taken,
			Source: "https://aws.amazon.com/lambda/pricing/", Note: "arm64, first 7.5 billion GB-seconds a month; billed per 1 ms"},
		HTTPAPIRequest: Price{USD: 1.00, Per: 1e6, Unit: "request", Taken: taken,
			Source: "https://aws.amazon.com/api-gateway/pricing/", Note: "HTTP API, first 300 million a month, metered in 512 KB increments"},
		LogsIngestion: Price{USD: 0.50, Per: 1, Unit: "GB ingested", Taken: taken,
			Source: "https://aws.amazon.com/cloudwatch/pricing/",
			Note:   "standard log class; Lambda logs are tiered from 2025-05-01, $0.50 being the first tier"},
		StepFunctionsTransition: Price{USD: 0.025, Per: 1000, Unit: "state transition", Taken: taken,
			Source: "https://aws.amazon.com/step-functions/pricing/", Note: "standard workflows; each retry is a transition"},
	}
}

// ModelPrice is what a model charges per token.
type ModelPrice struct {
	Name          string
	Input, Output Price
}

// Models are the list prices of models the LLM critics can call (per
// million tokens, on-demand, no caching or batch discount).
func Models() []ModelPrice {
	bedrock := "https://aws.amazon.com/bedrock/pricing/"
	openai := "https://openai.com/api/pricing/"
	m := func(name string, in, out float64, src, note string) ModelPrice {
		return ModelPrice{Name: name,
			Input:  Price{USD: in, Per: 1e6, Unit: "input token", Source: src, Taken: taken, Note: note},
			Output: Price{USD: out, Per: 1e6, Unit: "output token", Source: src, Taken: taken, Note: note}}
	}
	return []ModelPrice{
		m("bedrock: Claude Sonnet 4.x (global profile)", 3, 15, bedrock, "Sonnet 4, 4.5, 4.6; regional (us.) profiles of 4.5 and later cost 10% more"),
		m("bedrock: Claude Haiku 4.5 (global profile)", 1, 5, bedrock, "regional (us.) profile 10% more"),
		m("bedrock: Claude Opus 4.5+ (global profile)", 5, 25, bedrock, "regional (us.) profile 10% more"),
		m("openai: gpt-5", 1.25, 10, openai, ""),
		m("openai: gpt-5-mini", 0.25, 2, openai, ""),
		m("openai: gpt-4.1", 2, 8, openai, ""),
		m("openai: gpt-4.1-mini", 0.40, 1.60, openai, ""),
	}
}
