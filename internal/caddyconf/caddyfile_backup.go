package caddyconf

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/formoutbox/caddy-form-outbox/outbox/backup"
)

// BackupConfig is the JSON twin of `backup s3://bucket/prefix { ... }`: where the spool's
// journal is copied off the host (outbox/backup). The key values may be placeholders
// ({env.X}, {file./run/secrets/x}), resolved when the App is provisioned.
type BackupConfig struct {
	URL             string `json:"url"`
	Endpoint        string `json:"endpoint,omitempty"`
	Region          string `json:"region,omitempty"`
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	PathStyle       bool   `json:"path_style,omitempty"`
	// Instance names this host in object keys. Default: the host name.
	Instance string `json:"instance,omitempty"`
	// Every is how often sealed journal is shipped. Default 5s.
	Every caddy.Duration `json:"every,omitempty"`
	// MaxLocal bounds the journal kept for the bucket, in bytes. Default 1 GiB.
	MaxLocal int64 `json:"max_local,omitempty"`
}

// parseBackup reads the backup option of the global block:
//
//	backup s3://BUCKET/PREFIX {
//		endpoint URL               # omit for AWS; e.g. http://127.0.0.1:9000 for a self-hosted server
//		region REGION              # default us-east-1
//		access_key_id KEY          # e.g. {env.S3_ACCESS_KEY_ID}; omit both for the SDK's default chain
//		secret_access_key SECRET   # e.g. {env.S3_SECRET_ACCESS_KEY}
//		path_style                 # bucket in the path, as most self-hosted servers want
//		instance NAME              # this host in object names; default: the host name
//		every DURATION             # default 5s
//		max_local SIZE             # journal kept for the bucket; default 1GiB
//	}
//
// A backup needs the write-ahead spool (`spool always`), which the App turns on.
func parseBackup(d *caddyfile.Dispenser) (*BackupConfig, error) {
	url, err := singleArg(d)
	if err != nil {
		return nil, err
	}
	if _, _, err := backup.ParseURL(url); err != nil {
		return nil, d.Errf("%v", err)
	}
	bc := &BackupConfig{URL: url}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "endpoint":
			bc.Endpoint, err = singleArg(d)
		case "region":
			bc.Region, err = singleArg(d)
		case "access_key_id":
			bc.AccessKeyID, err = singleArg(d)
		case "secret_access_key":
			bc.SecretAccessKey, err = singleArg(d)
		case "instance":
			bc.Instance, err = singleArg(d)
		case "path_style":
			bc.PathStyle = true
			if d.NextArg() {
				err = d.ArgErr()
			}
		case "every":
			bc.Every, err = durationArg(d)
		case "max_local":
			bc.MaxLocal, err = sizeArg(d)
		default:
			err = d.Errf("backup: unknown option %q", d.Val())
		}
		if err != nil {
			return nil, err
		}
	}
	if (bc.AccessKeyID == "") != (bc.SecretAccessKey == "") {
		return nil, d.Err("backup: access_key_id and secret_access_key go together")
	}
	return bc, nil
}
