package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bounds framebench's Rust clients use too (src/redis.rs): connect, one command, waiting for
// a pooled connection; and the pool size.
const (
	redisConnectTimeout = 500 * time.Millisecond
	redisCommandTimeout = 1000 * time.Millisecond
	redisPoolSize       = 16
)

// quiet drops go-redis's own log lines (a failed dial per request once Redis is gone): the
// response status already says it, and the Rust clients log nothing either.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...interface{}) {}

// Store reads the redis scenario's keys through go-redis. A Store without a URL answers 503.
type Store struct {
	client *redis.Client
}

// NewStore makes a go-redis client for url (redis://127.0.0.1:PORT, loopback only), or a Store
// that answers 503 when url is empty. No connection is made until the first request.
func NewStore(rawURL string) (*Store, error) {
	if rawURL == "" {
		return &Store{}, nil
	}
	redis.SetLogger(quiet{})
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" {
		return nil, fmt.Errorf("--redis %q: want redis://127.0.0.1:PORT", rawURL)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--redis %q: loopback addresses only", rawURL)
	}
	return &Store{client: redis.NewClient(&redis.Options{
		Addr:         u.Host,
		DialTimeout:  redisConnectTimeout,
		ReadTimeout:  redisCommandTimeout,
		WriteTimeout: redisCommandTimeout,
		PoolTimeout:  redisCommandTimeout,
		PoolSize:     redisPoolSize,
		// No retries: a Redis that went away answers 502 within the bounds above, as the Rust
		// clients do.
		MaxRetries:      -1,
		DisableIdentity: true,
	})}, nil
}

// Get returns the value of key and 200, or an empty body and 404 (no such key), 400 (no key),
// 503 (no Redis configured) or 502 (Redis failed or timed out).
func (s *Store) Get(ctx context.Context, key string) ([]byte, int) {
	if s.client == nil {
		return []byte("no Redis configured"), 503
	}
	if key == "" {
		return []byte("missing key parameter"), 400
	}
	ctx, cancel := context.WithTimeout(ctx, 2*redisCommandTimeout)
	defer cancel()
	v, err := s.client.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return []byte("no such key"), 404
	case err != nil:
		return []byte("redis: " + err.Error()), 502
	}
	return v, 200
}
