package app

import (
	"context"
	"testing"
)

func TestNewStoreLoopbackOnly(t *testing.T) {
	for _, bad := range []string{"redis://10.0.0.1:6379", "http://127.0.0.1:6379", "redis://example.com:6379"} {
		if _, err := NewStore(bad); err == nil {
			t.Errorf("NewStore(%q) accepted", bad)
		}
	}
	if _, err := NewStore("redis://127.0.0.1:6379"); err != nil {
		t.Errorf("loopback refused: %v", err)
	}
}

func TestStoreWithoutURLAnswers503(t *testing.T) {
	s, err := NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	if _, status := s.Get(context.Background(), "foo"); status != 503 {
		t.Errorf("status %d, want 503", status)
	}
}

func TestStoreWithRedisGoneAnswers502(t *testing.T) {
	// Port 1 on loopback: nothing listens there, the dial is refused at once.
	s, err := NewStore("redis://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, status := s.Get(context.Background(), "foo"); status != 502 {
		t.Errorf("status %d, want 502", status)
	}
}
