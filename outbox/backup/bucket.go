package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Bucket is what the shipper and restore need of object storage; *S3 is the real one.
type Bucket interface {
	// Put writes an object with its SHA-256 (hex) in its metadata.
	Put(ctx context.Context, key string, body []byte, sha256 string) error
	// Head returns the SHA-256 an object's metadata carries and its size.
	Head(ctx context.Context, key string) (sha256 string, size int64, err error)
	// List returns the keys under prefix, in the bucket's (lexical) order.
	List(ctx context.Context, prefix string) ([]string, error)
	// Get returns an object's body and the SHA-256 its metadata carries.
	Get(ctx context.Context, key string) (body []byte, sha256 string, err error)
}

// Config is where the backups go: `backup s3://bucket/prefix { ... }`.
type Config struct {
	URL             string // s3://bucket/prefix
	Endpoint        string // empty: AWS
	Region          string
	AccessKeyID     string // empty: the SDK's default chain (env, shared files, instance role)
	SecretAccessKey string
	PathStyle       bool // bucket in the path, as most self-hosted servers want
}

// metaSHA256 is the metadata key of an object's checksum (x-amz-meta-sha256).
const metaSHA256 = "sha256"

// S3 is a Bucket on any S3-compatible store, through aws-sdk-go-v2.
type S3 struct {
	client *s3.Client
	bucket string
	// Prefix is the URL's prefix; keys are made under it.
	Prefix string
}

// NewS3 builds the client. It makes no request.
func NewS3(ctx context.Context, c Config) (*S3, error) {
	bucket, prefix, err := ParseURL(c.URL)
	if err != nil {
		return nil, err
	}
	region := c.Region
	if region == "" {
		region = "us-east-1" // what S3-compatible servers accept when they ignore it
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		// Checksums only where the API requires them: several S3-compatible servers
		// reject the SDK's default streamed trailing checksums. Integrity is this
		// package's SHA-256 in the metadata, checked by HEAD after PUT and on restore.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if c.AccessKeyID != "" || c.SecretAccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("backup: aws config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
	})
	return &S3{client: client, bucket: bucket, Prefix: prefix}, nil
}

// Put implements Bucket.
func (b *S3) Put(ctx context.Context, key string, body []byte, sha string) error {
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		ContentType: aws.String("application/gzip"),
		Metadata:    map[string]string{metaSHA256: sha},
	})
	if err != nil {
		return fmt.Errorf("backup: put %s: %w", key, err)
	}
	return nil
}

// Head implements Bucket.
func (b *S3) Head(ctx context.Context, key string) (string, int64, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return "", 0, fmt.Errorf("backup: head %s: %w", key, err)
	}
	return out.Metadata[metaSHA256], aws.ToInt64(out.ContentLength), nil
}

// List implements Bucket.
func (b *S3) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("backup: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// Get implements Bucket.
func (b *S3) Get(ctx context.Context, key string) ([]byte, string, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, "", fmt.Errorf("backup: get %s: %w", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", fmt.Errorf("backup: get %s: %w", key, err)
	}
	return body, out.Metadata[metaSHA256], nil
}

// errMismatch is wrapped when an object does not carry the checksum it should.
var errMismatch = errors.New("checksum mismatch")
