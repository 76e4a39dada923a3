// Package secrets fills a function's configuration from Secrets Manager
// (CRITICIZER_SECRETS_ARN). Only the functions that hold secrets — intake,
// fetch, llm, notify — import it, so the others do not link the Secrets
// Manager client.
package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/criticizer/criticizer/internal/config"
)

// Apply reads every secret cfg.SecretsARN names (comma-separated ARNs,
// each a JSON object of variable names to string values) and fills in the
// settings the environment left unset (config.Config.ApplySecrets). A key
// set by two secrets takes the first one's value: a function's own secret
// comes first, shared ones (the unsubscribe key) after. Called once at
// init, so a warm Lambda does not read them again. Errors name the secret
// and the failure, never a value.
func Apply(ctx context.Context, awsCfg aws.Config, cfg config.Config) (config.Config, error) {
	if cfg.SecretsARN == "" {
		return cfg, nil
	}
	values := map[string]string{}
	for _, arn := range strings.Split(cfg.SecretsARN, ",") {
		if arn = strings.TrimSpace(arn); arn == "" {
			continue
		}
		v, err := load(ctx, awsCfg, cfg.Endpoints.SecretsManager, arn)
		if err != nil {
			return cfg, err
		}
		for k, x := range v {
			if _, ok := values[k]; !ok {
				values[k] = x
			}
		}
	}
	return cfg.ApplySecrets(values)
}

// load reads one secret with GetSecretValue, in the secret ARN's region.
func load(ctx context.Context, cfg aws.Config, endpoint, arn string) (map[string]string, error) {
	client := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if parts := strings.Split(arn, ":"); len(parts) >= 6 && parts[0] == "arn" && parts[3] != "" {
			o.Region = parts[3]
		}
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvSecretsARN, err)
	}
	var values map[string]string
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &values); err != nil {
		return nil, fmt.Errorf("%s: the secret must be a JSON object of variable names to string values", config.EnvSecretsARN)
	}
	return values, nil
}
