// Package blob stores payloads too large for a DynamoDB item (diffs up to
// 1 MiB; items are limited to 400 KB) in S3, content-addressed: the key is the
// SHA-256 of the bytes, so a retry that stores the same diff again writes the
// same object and a reference can never point at changed content.
package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/criticizer/criticizer/internal/retry"
)

// ErrNotFound is returned for a reference with no object.
var ErrNotFound = errors.New("blob not found")

// ErrTooLarge is returned for an object larger than the caller's limit:
// nothing past the limit is read.
var ErrTooLarge = errors.New("blob larger than the limit")

// Store is an S3 bucket of content-addressed blobs.
type Store struct {
	s3     *s3.Client
	bucket string
}

// NewS3 returns an S3 client from the SDK config, at endpoint when set (the
// local emulator, path-style).
func NewS3(cfg aws.Config, endpoint string) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
}

// New returns a blob store over bucket.
func New(c *s3.Client, bucket string) *Store { return &Store{s3: c, bucket: bucket} }

// Put stores b under prefix and returns its reference and SHA-256 (hex).
func (s *Store) Put(ctx context.Context, prefix string, b []byte) (ref, sha string, err error) {
	sum := sha256.Sum256(b)
	sha = hex.EncodeToString(sum[:])
	ref = prefix + "/" + sha
	_, err = s.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(ref), Body: bytes.NewReader(b),
		ContentLength: aws.Int64(int64(len(b))), ContentType: aws.String("text/plain; charset=utf-8"),
	})
	if err != nil {
		return "", "", fmt.Errorf("s3 put %s: %w", ref, err)
	}
	return ref, sha, nil
}

// Get reads a blob by reference, refusing more than limit bytes.
func (s *Store) Get(ctx context.Context, ref string, limit int64) ([]byte, error) {
	out, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(ref)})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		// A reference whose object is gone stays gone: permanent.
		return nil, retry.Permanent(retry.NotFound, fmt.Errorf("s3 get %s: %w: %w", ref, ErrNotFound, err))
	}
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", ref, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("s3 read %s: %w", ref, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("s3 get %s: larger than %d bytes: %w", ref, limit, ErrTooLarge)
	}
	return b, nil
}
